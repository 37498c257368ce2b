"""Request-scoped dependencies: the service state and the caller's API key."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated

from fastapi import Depends, HTTPException, Request, status

from rag_app.config import Settings
from rag_app.kb import KnowledgeBase
from rag_app.service.auth import KeyInfo, verify_key
from rag_app.service.schemas import WorkersHealth
from rag_app.store.jobs import JobQueue


@dataclass
class ServiceState:
    settings: Settings
    kb: KnowledgeBase
    queue: JobQueue
    upload_dir: Path
    worker_health: Callable[[], WorkersHealth]
    wake_workers: Callable[[], None]  # after an enqueue: idle workers claim it now, not at a poll


def get_state(request: Request) -> ServiceState:
    state: ServiceState = request.app.state.service
    return state


def get_key(request: Request, state: Annotated[ServiceState, Depends(get_state)]) -> KeyInfo:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "missing API key: send 'Authorization: Bearer <key>' (create one with `rag keys create`)",
            headers={"WWW-Authenticate": "Bearer"},
        )
    info = verify_key(state.kb.serving.api_keys, token.strip())
    if info is None:
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "invalid or revoked API key",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return replace(info, collections=state.kb.collections.key_limit(info.key_id))


def require_editor(key: Annotated[KeyInfo, Depends(get_key)]) -> KeyInfo:
    if not key.can_edit:
        raise HTTPException(
            status.HTTP_403_FORBIDDEN, f"role '{key.role.value}' cannot change documents"
        )
    return key


StateDep = Annotated[ServiceState, Depends(get_state)]
KeyDep = Annotated[KeyInfo, Depends(get_key)]
EditorDep = Annotated[KeyInfo, Depends(require_editor)]
