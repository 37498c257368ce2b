"""API keys: ``rk_<key id>_<secret>``, stored as a SHA-256 hash, bound to a tenant and a role.

The tenant of every request comes from its key, never from the request body.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from rag_app.store.api_keys import ApiKeyStore
from rag_app.store.collections import CollectionStore
from rag_app.store.ledger import Ledger

_TENANT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


class Role(StrEnum):
    READER = "reader"  # ask, retrieve, list and read documents
    EDITOR = "editor"  # and upload, reparse, delete


@dataclass(frozen=True)
class KeyInfo:
    key_id: str
    tenant: str
    role: Role
    name: str
    created_at: float
    revoked: bool = False
    # the collection ids the key is limited to (store/collections.py); None: its whole tenant
    collections: tuple[str, ...] | None = None

    @property
    def can_edit(self) -> bool:
        return self.role == Role.EDITOR


def _hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def create_key(
    ledger: Ledger,
    tenant: str,
    role: str | Role,
    name: str = "",
    collections: Sequence[str] | None = None,
) -> str:
    """Create a key and return it in plain text (shown once; only its hash is stored).
    ``collections``: limit it to these collections of the tenant (names; CollectionNotFound
    when one does not exist)."""
    if not _TENANT.match(tenant):
        raise ValueError(
            f"invalid tenant {tenant!r}: use letters, digits, '.', '_' or '-' (max 128)"
        )
    role = Role(role)
    store = CollectionStore(ledger.engine)
    if collections:
        store.ids(tenant, collections)  # every one exists, before the key is made
    key_id = secrets.token_hex(4)
    key = f"rk_{key_id}_{secrets.token_urlsafe(24)}"
    ledger.api_keys.add(
        key_id=key_id,
        key_hash=_hash(key),
        tenant=tenant,
        role=role.value,
        name=name,
        created_at=time.time(),
    )
    if collections:
        store.limit_key(key_id, tenant, collections)
    return key


def verify_key(keys: ApiKeyStore, key: str) -> KeyInfo | None:
    """The key's tenant and role, or None when it is unknown or revoked (``keys``: a ledger's
    ``api_keys``, e.g. ``KnowledgeBase.serving.api_keys``)."""
    if not key or not key.startswith("rk_"):
        return None
    row = keys.active_by_hash(_hash(key))
    if row is None:
        return None
    return KeyInfo(row["key_id"], row["tenant"], Role(row["role"]), row["name"], row["created_at"])


def list_keys(ledger: Ledger) -> list[KeyInfo]:
    rows = ledger.api_keys.all()
    store = CollectionStore(ledger.engine)
    return [
        KeyInfo(
            r["key_id"],
            r["tenant"],
            Role(r["role"]),
            r["name"],
            r["created_at"],
            revoked=r["revoked_at"] is not None,
            collections=store.key_limit(r["key_id"]),
        )
        for r in rows
    ]


def revoke_key(ledger: Ledger, key_id: str) -> bool:
    return ledger.api_keys.revoke(key_id, time.time())
