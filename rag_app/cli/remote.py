"""``rag ask`` and ``rag retrieve`` against a running ``rag serve`` (``--server`` or
``RAG_SERVER``, with ``--api-key`` or ``RAG_API_KEY``).

A local ``rag ask`` loads the knowledge base and its models for one question: seconds of
start-up on a small machine (benchmarks/performance/startup.py). A server holds them loaded, so
a script asking many questions one command at a time sends each to it instead: this module
imports only an HTTP client, posts the question to ``/api/ask`` or ``/api/retrieve`` and turns
the reply back into the objects the local commands print, so the output is the same.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from rag_app.types import Answer, Source

TIMEOUT_S = 120.0


class RemoteError(RuntimeError):
    """The server could not be reached or refused the request (the message says why)."""


class RemoteKB(BaseModel):
    """A running ``rag serve`` at ``url``, asked with ``key`` (its tenant is the key's)."""

    url: str
    key: str
    timeout: float = TIMEOUT_S

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return self.request("POST", path, body)

    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        """The server's JSON reply to ``method path`` (``body`` as JSON); RemoteError when it
        can't be reached or refuses."""
        import httpx

        try:
            reply = httpx.request(
                method,
                self.url.rstrip("/") + path,
                json=body,
                headers={"Authorization": f"Bearer {self.key}"},
                timeout=self.timeout,
            )
        except httpx.HTTPError as exc:
            raise RemoteError(
                f"no answer from the server at {self.url} ({type(exc).__name__}): is `rag serve` "
                "running there? (unset RAG_SERVER to ask the local knowledge base)"
            ) from exc
        if reply.status_code == 401:
            raise RemoteError(f"the server at {self.url} refused the key (RAG_API_KEY / --api-key)")
        if reply.status_code >= 400:
            try:
                detail = reply.json().get("detail")
            except ValueError:
                detail = reply.text[:200]
            raise RemoteError(f"the server answered {reply.status_code}: {detail}")
        data: dict[str, Any] = reply.json()
        return data

    def ask(
        self, question: str, top_k: int, collections: list[str] | None
    ) -> tuple[Answer, list[dict[str, Any]]]:
        """The server's answer as an :class:`Answer`, and its sources as the local commands'
        JSON rows (with ``filename``)."""
        body: dict[str, Any] = {"question": question, "top_k": top_k}
        if collections:
            body["collection"] = collections
        data = self._post("/api/ask", body)
        rows = [_row(s) for s in data.get("sources", [])]
        answer = Answer.model_validate({**data, "sources": [_source(r) for r in rows]})
        return answer, rows

    def retrieve(
        self, question: str, top_k: int, collections: list[str] | None
    ) -> tuple[list[Source], list[dict[str, Any]]]:
        body: dict[str, Any] = {"query": question, "top_k": top_k}
        if collections:
            body["collection"] = collections
        rows = [_row(s) for s in self._post("/api/retrieve", body).get("sources", [])]
        return [_source(r) for r in rows], rows


def _row(served: dict[str, Any]) -> dict[str, Any]:
    """A served source as a local command's JSON row: ``source`` is the file name (the server's
    path of the file is not sent)."""
    return {**served, "source": served.get("filename", "")}


def _source(row: dict[str, Any]) -> Source:
    return Source.model_validate({k: v for k, v in row.items() if k in Source.model_fields})
