"""/api/ask and /api/retrieve, scoped to the API key's tenant."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException

from rag_app.service.deps import KeyDep, ServiceState, StateDep
from rag_app.service.json_body import body_schema, json_body
from rag_app.service.schemas import AnswerOut, AskIn, RetrieveIn, RetrieveOut, SourceOut
from rag_app.types import Source

router = APIRouter(prefix="/api", tags=["query"])


def sources_out(state: ServiceState, sources: list[Source]) -> list[SourceOut]:
    """The sources with their documents' file names."""
    names: dict[str, str] = {}
    for s in sources:
        if s.doc_id not in names:
            doc = state.kb.document(s.doc_id)
            names[s.doc_id] = doc.rel_path if doc else ""
    return [SourceOut.of(s, names[s.doc_id]) for s in sources]


AskBody = Annotated[AskIn, Depends(json_body(AskIn))]
RetrieveBody = Annotated[RetrieveIn, Depends(json_body(RetrieveIn))]


@router.post("/ask", response_model=AnswerOut, openapi_extra=body_schema(AskIn))
def ask(key: KeyDep, body: AskBody, state: StateDep) -> AnswerOut:
    """Answer from the tenant's documents with citations, or refuse ("当前知识库中未找到足够依据。")."""
    if not body.question.strip():
        raise HTTPException(422, "question is empty")
    answer = state.kb.ask(body.question, tenant=key.tenant, top_k=body.top_k, doc_ids=body.doc_ids)
    fields = answer.model_dump(exclude={"sources"})
    return AnswerOut(**fields, sources=sources_out(state, answer.sources))


@router.post("/retrieve", response_model=RetrieveOut, openapi_extra=body_schema(RetrieveIn))
def retrieve(key: KeyDep, body: RetrieveBody, state: StateDep) -> RetrieveOut:
    """Hybrid retrieval (vector + BM25, fused and reranked) without answering."""
    if not body.query.strip():
        raise HTTPException(422, "query is empty")
    found = state.kb.retrieve(body.query, tenant=key.tenant, top_k=body.top_k, doc_ids=body.doc_ids)
    return RetrieveOut(sources=sources_out(state, found))
