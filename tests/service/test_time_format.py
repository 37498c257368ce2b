"""One time format on every route (issue 65): collections, conversations and feedback gave
epoch seconds while documents gave ISO 8601; now every time is ISO 8601 in UTC."""

from __future__ import annotations

import json
import re
import time
from datetime import datetime
from typing import Any

from rag_app.store.feedback import FeedbackRecord
from tests.service.conftest import POLICY, Service

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")


def _recent(value: Any) -> None:
    assert isinstance(value, str) and ISO.match(value), value
    when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    assert when.utcoffset() is not None and abs(when.timestamp() - time.time()) < 600


def test_every_route_gives_iso_8601_with_its_zone(service: Service) -> None:
    client, editor = service.client, service.editor
    doc_id = service.upload("差旅.md", POLICY).json()["doc_id"]
    document = service.wait(doc_id)
    _recent(document["created_at"]), _recent(document["updated_at"])

    made = client.post("/api/collections", json={"name": "制度"}, headers=editor)
    assert made.status_code in (200, 201), made.text
    (collection,) = client.get("/api/collections", headers=editor).json()["collections"]
    _recent(collection["created_at"])

    turn = client.post("/api/chat", json={"question": "一线城市住宿标准是多少？"}, headers=editor)
    conversation = turn.json()["conversation_id"]
    (summary,) = client.get("/api/conversations", headers=editor).json()["conversations"]
    _recent(summary["created_at"]), _recent(summary["updated_at"])
    whole = client.get(f"/api/conversations/{conversation}", headers=editor).json()
    _recent(whole["created_at"]), _recent(whole["updated_at"])
    _recent(whole["turns"][0]["created_at"])

    rated = client.post(
        "/api/feedback", json={"conversation_id": conversation, "rating": "up"}, headers=editor
    )
    assert rated.status_code == 201, rated.text
    (record,) = client.get("/api/feedback", headers=editor).json()["feedback"]
    _recent(record["created_at"])

    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    for name in ("CollectionOut", "ConversationSummary", "ConversationOut", "TurnOut"):
        assert schemas[name]["properties"]["created_at"]["format"] == "date-time", name


def test_a_record_written_as_json_reads_back_either_way() -> None:
    record = FeedbackRecord(
        tenant="t", key_id="k", rating="up", question="q", resolved_question="q", answer="a",
        created_at=1_765_000_000.25,
    )  # fmt: skip
    written = json.loads(record.model_dump_json())
    assert written["created_at"] == "2025-12-06T05:46:40.250000Z"
    assert FeedbackRecord.model_validate(written).created_at == record.created_at
    assert FeedbackRecord.model_validate({**written, "created_at": 12.5}).created_at == 12.5
    assert record.model_dump()["created_at"] == 1_765_000_000.25  # in Python: epoch seconds
