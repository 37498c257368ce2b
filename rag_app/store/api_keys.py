"""The ``api_keys`` table: hashed service keys with their tenant and role (the policy, key
format and hashing are in service/auth.py; this is only their storage)."""

from __future__ import annotations

from sqlalchemy import and_, insert, select, update
from sqlalchemy.engine import Engine, RowMapping

from rag_app.store.schema import api_keys


class ApiKeyStore:
    """Rows of ``api_keys``; times are epoch seconds."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def add(
        self, *, key_id: str, key_hash: str, tenant: str, role: str, name: str, created_at: float
    ) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                insert(api_keys).values(
                    key_id=key_id,
                    key_hash=key_hash,
                    tenant=tenant,
                    role=role,
                    name=name,
                    created_at=created_at,
                )
            )

    def active_by_hash(self, key_hash: str) -> RowMapping | None:
        """The key with this hash, unless it is revoked."""
        with self.engine.connect() as conn:
            return (
                conn.execute(
                    select(api_keys).where(
                        and_(api_keys.c.key_hash == key_hash, api_keys.c.revoked_at.is_(None))
                    )
                )
                .mappings()
                .first()
            )

    def all(self) -> list[RowMapping]:
        """Every key, oldest first."""
        with self.engine.connect() as conn:
            return list(
                conn.execute(select(api_keys).order_by(api_keys.c.created_at)).mappings().all()
            )

    def revoke(self, key_id: str, revoked_at: float) -> bool:
        """False when there is no active key with this id."""
        with self.engine.begin() as conn:
            result = conn.execute(
                update(api_keys)
                .where(and_(api_keys.c.key_id == key_id, api_keys.c.revoked_at.is_(None)))
                .values(revoked_at=revoked_at)
            )
        return bool(result.rowcount)
