"""The FastAPI application: API under /api (OpenAPI at /docs, offline), browser UI at /.

>>> app = create_app(Settings(kb_dir=Path(".rag")))   # doctest: +SKIP
>>> uvicorn.run(app, host="127.0.0.1", port=8000)      # doctest: +SKIP
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import APIRouter, FastAPI
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline

from rag_app import __version__
from rag_app.config import Settings
from rag_app.kb import KnowledgeBase
from rag_app.service import (
    routes_annotations,
    routes_chat,
    routes_collections,
    routes_documents,
    routes_feedback,
    routes_query,
)
from rag_app.service.client_limits import ClientLimits, ClientPolicy
from rag_app.service.deps import KeyDep, ServiceState, StateDep
from rag_app.service.errors import install_error_handlers
from rag_app.service.headers import SecurityHeaders
from rag_app.service.processes import ServeProcesses
from rag_app.service.redoc import install_redoc
from rag_app.service.schemas import Health, Me, WorkersHealth
from rag_app.service.worker import WorkerPool, express_bytes, warm_up

logger = logging.getLogger(__name__)

WEB_DIR = Path(__file__).resolve().parent.parent / "web"
#: Where the Swagger UI / ReDoc scripts, styles and icon are served from (local files).
DOCS_ASSETS_URL = "/docs-assets"

system = APIRouter(prefix="/api", tags=["system"])


@system.get("/health", response_model=Health)
def health(state: StateDep) -> Health:
    """Liveness and queue depth (no key needed)."""
    counts = state.queue.counts()
    workers = state.worker_health()
    return Health(
        status="ok" if workers.alive >= workers.configured else "degraded",
        version=__version__,
        embedding=state.settings.embedding,
        queue={"pending": counts["pending"], "processing": counts["processing"]},
        workers=workers,
    )


@system.get("/me", response_model=Me)
def me(key: KeyDep, state: StateDep) -> Me:
    """The tenant and role of the API key you sent (and the collections it is limited to)."""
    limited = None
    if key.collections is not None:
        limited = state.kb.collections.names(key.tenant, key.collections)
    return Me(tenant=key.tenant, role=key.role.value, key_id=key.key_id, collections=limited)


def _threads(pool: WorkerPool) -> WorkersHealth:
    configured = pool.configured()
    return WorkersHealth(
        mode="threads" if configured else "external", configured=configured, alive=pool.alive()
    )


def _warm_up(kb: KnowledgeBase, ingests: bool) -> None:
    from rag_app.text.tokenizer import query_tokens

    try:
        _ = kb.embed_model
        query_tokens("预热分词词典")
        kb.serving.prewarm()  # the keyword indexes' common terms
    except Exception:  # the first request will report the problem properly
        logger.exception("warm-up failed")
    if ingests:  # worker threads in this process: their parse server, too
        warm_up(kb)


def create_app(
    settings: Settings | None = None,
    *,
    kb: KnowledgeBase | None = None,
    workers: int | None = None,
    processes: ServeProcesses | None = None,
) -> FastAPI:
    """Build the app. ``workers`` ingestion threads run inside it (0: use ``rag worker``).

    ``processes``: the worker processes ``rag serve`` supervises, reported by /api/health.
    """
    settings = settings or Settings()
    kb = kb or KnowledgeBase(settings)
    threads = settings.workers if workers is None else workers
    queue = kb.serving.job_queue(settings.job_max_attempts)
    pool = WorkerPool(
        kb,
        queue,
        threads=threads,
        lease_seconds=settings.job_lease_seconds,
        poll_seconds=settings.worker_poll_seconds,
        express_max_bytes=express_bytes(settings.express_lane_mb),
    )
    state = ServiceState(
        settings=settings,
        kb=kb,
        queue=queue,
        upload_dir=settings.kb_dir / "uploads",
        worker_health=processes.worker_health if processes else functools.partial(_threads, pool),
        wake_workers=processes.wake if processes else pool.wake,
    )

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        # load the embedding model, jieba's dictionary and the keyword index's common posting
        # lists in the background: the first requests needn't pay for them
        threading.Thread(target=_warm_up, args=(kb, bool(pool.workers)), daemon=True).start()
        pool.start()
        try:
            yield
        finally:
            pool.stop()

    # /docs and /redoc load Swagger UI / ReDoc from the fastapi-offline package (served under
    # DOCS_ASSETS_URL), not from a CDN, and Swagger UI does not send the spec to its online
    # validator: the API docs work on a machine with no network
    app = FastAPIOffline(
        static_url=DOCS_ASSETS_URL,
        redoc_url=None,  # served by install_redoc: its logo came from cdn.redoc.ly
        swagger_ui_parameters={"validatorUrl": None},  # no spec validation by swagger.io
        title="rag_app knowledge-base service",
        version=__version__,
        description="Upload documents, watch them ingest, ask questions with cited sources. "
        "Every /api route except /api/health needs `Authorization: Bearer <key>`.",
        lifespan=lifespan,
    )
    install_error_handlers(app)
    install_redoc(app, DOCS_ASSETS_URL)
    limits = ClientPolicy(
        max_requests=settings.max_connections_per_client,
        min_rate=settings.body_min_rate,
        grace=settings.body_rate_grace,
    )
    app.add_middleware(ClientLimits, policy=limits)  # inside SecurityHeaders: its 429/408 too
    app.add_middleware(SecurityHeaders)
    app.state.service = state
    app.state.pool = pool
    app.include_router(system)
    app.include_router(routes_documents.router)
    app.include_router(routes_query.router)
    app.include_router(routes_chat.router)
    app.include_router(routes_feedback.router)
    app.include_router(routes_annotations.router)
    app.include_router(routes_collections.router)
    if (WEB_DIR / "index.html").is_file():
        app.mount("/", StaticFiles(directory=WEB_DIR, html=True), name="web")
    return app
