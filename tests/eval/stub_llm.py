"""A local HTTP server speaking the OpenAI chat-completions protocol, for ragas' LLM metrics.

ragas (0.4, instructor JSON mode) puts the JSON schema of the expected answer in the prompt; the
stub reads the schema's title and answers with a fixed, valid object of that model.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

_SCHEMA = re.compile(r"JSON Schema:\s*")


def chat_completion(content: str, model: str = "stub") -> dict[str, Any]:
    """An OpenAI chat-completions reply whose message is ``content``."""
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def schema_title(prompt: str) -> str:
    match = _SCHEMA.search(prompt)
    if not match:
        return ""
    schema, _ = json.JSONDecoder().raw_decode(prompt[match.end() :])
    return str(schema.get("title", ""))


def canned(title: str) -> dict[str, Any]:
    if title == "StatementGeneratorOutput":
        return {"statements": ["The lock lasts 30 minutes.", "It follows 5 failed attempts."]}
    if title == "NLIStatementOutput":  # one supported, one not: faithfulness 0.5
        return {
            "statements": [
                {"statement": "The lock lasts 30 minutes.", "reason": "stated", "verdict": 1},
                {"statement": "It follows 5 failed attempts.", "reason": "absent", "verdict": 0},
            ]
        }
    if title == "ContextPrecisionOutput":
        return {"reason": "useful", "verdict": 1}
    if title == "ContextRecallOutput":
        return {
            "classifications": [
                {"statement": "s1", "reason": "in context", "attributed": 1},
                {"statement": "s2", "reason": "in context", "attributed": 1},
                {"statement": "s3", "reason": "not found", "attributed": 0},
                {"statement": "s4", "reason": "in context", "attributed": 1},
            ]
        }
    return {}


class StubOpenAI(BaseHTTPRequestHandler):
    requests: list[dict[str, Any]] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
        title = schema_title(prompt)
        type(self).requests.append(
            {
                "path": self.path,
                "body": body,
                "auth": self.headers.get("Authorization"),
                "title": title,
            }
        )
        payload = chat_completion(json.dumps(canned(title)), body.get("model", "stub"))
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        return


@contextmanager
def stub_openai() -> Iterator[str]:
    """Serve the stub on a free local port; yields the ``/v1`` base URL."""
    StubOpenAI.requests = []
    server = HTTPServer(("127.0.0.1", 0), StubOpenAI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1"
    finally:
        server.shutdown()
        server.server_close()
