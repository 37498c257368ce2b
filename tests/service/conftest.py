"""Fixtures for the service: a real app on a temporary knowledge base, keys for two tenants."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

POLICY = """# 差旅管理办法

## 第一章 总则

第一条 为规范公司差旅费用管理，制定本办法。

## 第二章 住宿标准

第三条 一线城市住宿标准为每晚600元，其他城市为每晚400元。

第四条 超出标准的部分由员工自行承担。
"""

OTHER = """# 研发部值班制度

## 值班安排

研发部实行周末轮流值班，值班人员须在上午9点前到岗。

## 值班补贴

每次周末值班补贴为300元。
"""


@dataclass
class Service:
    client: TestClient
    app: Any
    kb_dir: Path
    editor: dict[str, str]
    reader: dict[str, str]
    other_editor: dict[str, str]

    def upload(self, name: str, data: bytes | str, headers: dict[str, str] | None = None) -> Any:
        body = data.encode() if isinstance(data, str) else data
        return self.client.post(
            "/api/documents",
            files={"file": (name, body, "application/octet-stream")},
            headers=headers if headers is not None else self.editor,
        )

    def wait(self, doc_id: str, headers: dict[str, str] | None = None, timeout: float = 60) -> Any:
        """Poll the document until its status is final; return the last body."""
        deadline = time.monotonic() + timeout
        while True:
            body = self.client.get(
                f"/api/documents/{doc_id}", headers=headers or self.editor
            ).json()
            if body["status"] in ("SUCCESS", "FAILED") and (
                body["job"] is None or body["job"]["status"] not in ("PENDING", "PROCESSING")
            ):
                return body
            if time.monotonic() > deadline:
                raise AssertionError(f"document {doc_id} still {body['status']}: {body}")
            time.sleep(0.1)


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture
def make_service(tmp_path: Path, embed_model: Any) -> Iterator[Callable[..., Service]]:
    from rag_app.config import Settings
    from rag_app.kb import KnowledgeBase
    from rag_app.service.app import create_app
    from rag_app.service.auth import create_key

    clients: list[TestClient] = []

    def make(**overrides: Any) -> Service:
        settings = Settings(kb_dir=tmp_path / "kb", job_lease_seconds=2.0, **overrides)
        kb = KnowledgeBase(settings, embed_model=embed_model)
        app = create_app(settings, kb=kb)
        client = TestClient(app)
        client.__enter__()
        clients.append(client)
        return Service(
            client=client,
            app=app,
            kb_dir=settings.kb_dir,
            editor=bearer(create_key(kb.ledger, "acme", "editor", "test editor")),
            reader=bearer(create_key(kb.ledger, "acme", "reader", "test reader")),
            other_editor=bearer(create_key(kb.ledger, "globex", "editor")),
        )

    yield make
    for client in clients:
        client.__exit__(None, None, None)
        client.app.state.service.kb.close()  # type: ignore[attr-defined]


@pytest.fixture
def service(make_service: Callable[..., Service]) -> Service:
    return make_service()
