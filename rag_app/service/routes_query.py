"""/api/ask and /api/retrieve, scoped to the API key's tenant."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, HTTPException
from fastapi.responses import StreamingResponse

from rag_app.service.access import as_names, scope_for
from rag_app.service.deps import KeyDep, ServiceState, StateDep
from rag_app.service.json_body import body_schema, json_body
from rag_app.service.schemas import AnswerOut, AskIn, RetrieveIn, RetrieveOut, SourceOut
from rag_app.service.streaming import AnswerStream
from rag_app.synthesis.citations import TextSink
from rag_app.types import Answer, Source

router = APIRouter(prefix="/api", tags=["query"])

Out = TypeVar("Out", bound=AnswerOut)


def filenames(
    state: ServiceState, doc_ids: Iterable[str], tenant: str | None = None
) -> dict[str, str]:
    """Each document's file name ("" when it is gone, or not ``tenant``'s when one is given)."""
    names: dict[str, str] = {}
    for doc_id in doc_ids:
        if doc_id not in names:
            doc = state.kb.documents.get(doc_id)
            names[doc_id] = doc.rel_path if doc and tenant in (None, doc.tenant) else ""
    return names


def sources_out(state: ServiceState, sources: list[Source]) -> list[SourceOut]:
    """The sources with their documents' file names."""
    names = filenames(state, (s.doc_id for s in sources))
    return [SourceOut.of(s, names[s.doc_id]) for s in sources]


def answer_out(state: ServiceState, answer: Answer, model: type[Out], **extra: Any) -> Out:
    """``answer`` as the API serves it (``model``, with ``extra`` fields): its sources with
    their file names."""
    fields = answer.model_dump(exclude={"sources"})
    return model(**fields, sources=sources_out(state, answer.sources), **extra)


AskBody = Annotated[AskIn, Depends(json_body(AskIn))]
RetrieveBody = Annotated[RetrieveIn, Depends(json_body(RetrieveIn))]


STREAMED: dict[int | str, dict[str, Any]] = {
    200: {"content": {"text/event-stream": {}}, "description": "With stream: true."}
}


@router.post("/ask", response_model=AnswerOut, openapi_extra=body_schema(AskIn), responses=STREAMED)
def ask(key: KeyDep, body: AskBody, state: StateDep) -> AnswerOut | StreamingResponse:
    """Answer from the tenant's documents with citations, or refuse ("当前知识库中未找到足够依据。").
    With ``stream: true``, server-sent events: the text as it is written, then the answer."""
    if not body.question.strip():
        raise HTTPException(422, "question is empty")
    scope = scope_for(state, key, body.collection, body.doc_ids)
    names = as_names(body.collection)  # whose annotations may answer (scope_for checked them)
    reach = state.kb.collections.ids(key.tenant, names) if names else key.collections

    def produce(on_text: TextSink | None = None) -> AnswerOut:
        answer = state.kb.ask(
            body.question, tenant=key.tenant, top_k=body.top_k, doc_ids=scope, on_text=on_text,
            collection_ids=reach,
        )  # fmt: skip
        return answer_out(state, answer, AnswerOut)

    return AnswerStream(produce).response() if body.stream else produce()


@router.post("/retrieve", response_model=RetrieveOut, openapi_extra=body_schema(RetrieveIn))
def retrieve(key: KeyDep, body: RetrieveBody, state: StateDep) -> RetrieveOut:
    """Hybrid retrieval (vector + BM25, fused and reranked) without answering."""
    if not body.query.strip():
        raise HTTPException(422, "query is empty")
    scope = scope_for(state, key, body.collection, body.doc_ids)
    found = state.kb.retrieve(body.query, tenant=key.tenant, top_k=body.top_k, doc_ids=scope)
    return RetrieveOut(sources=sources_out(state, found))
