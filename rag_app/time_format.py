"""One time format on every route: ISO 8601 in UTC, as documents' times are written
(``2026-12-07T21:37:31.978124Z``).

Collections, conversations and feedback keep their times as epoch seconds (floats in the
ledger and in Python); :data:`EpochTime` writes such a field in JSON as a date-time (the same
form pydantic gives a UTC ``datetime``) and reads either form back, so a JSON file written
before still loads. A leaf: the store and the service both use it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer, WithJsonSchema


def as_datetime(seconds: float) -> datetime:
    """Epoch seconds as an aware UTC datetime."""
    return datetime.fromtimestamp(seconds, UTC)


def as_epoch(value: Any) -> Any:
    """An ISO 8601 text or a datetime as epoch seconds (no zone: UTC); anything else as it is
    (a number; pydantic refuses the rest)."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return value
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()
    return value


EpochTime = Annotated[
    float,
    BeforeValidator(as_epoch),
    PlainSerializer(as_datetime, return_type=datetime, when_used="json"),
    WithJsonSchema({"type": "string", "format": "date-time"}, mode="serialization"),
]
