"""The tool's RSA signing keys: generated once into the data dir, published as a JWKS, rotated with a grace period.

``<data dir>/lti/keys.json`` (mode 0600) holds every key still published: the current one signs, a retired one
stays in the JWKS until its grace period is over, so a platform that cached our keyset keeps verifying what was
signed just before a rotation.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from jwcrypto.jwk import JWK

from app.db import utcnow

DEFAULT_GRACE = timedelta(days=7)
_lock = threading.Lock()


@dataclass(frozen=True)
class ToolKey:
    kid: str
    private_pem: str
    created_at: datetime
    retired_at: datetime | None = None

    def public_jwk(self) -> dict[str, Any]:
        jwk = JWK.from_pem(self.private_pem.encode())
        public: dict[str, Any] = json.loads(jwk.export_public())
        public.update(kid=self.kid, alg="RS256", use="sig")
        return public

    @property
    def public_pem(self) -> str:
        return JWK.from_pem(self.private_pem.encode()).export_to_pem().decode()


def _new_key() -> ToolKey:
    jwk = JWK.generate(kty="RSA", size=2048)
    pem = jwk.export_to_pem(private_key=True, password=None).decode()
    return ToolKey(kid=jwk.thumbprint(), private_pem=pem, created_at=utcnow())


class KeyStore:
    """The keys of one data dir. Reads the file each time: another process (the CLI) may have rotated."""

    def __init__(self, data_dir: Path, *, grace: timedelta = DEFAULT_GRACE) -> None:
        self.path = data_dir / "lti" / "keys.json"
        self.grace = grace

    def _read(self) -> list[ToolKey]:
        if not self.path.exists():
            return []
        rows = json.loads(self.path.read_text())["keys"]
        return [
            ToolKey(
                kid=r["kid"],
                private_pem=r["private_pem"],
                created_at=datetime.fromisoformat(r["created_at"]),
                retired_at=datetime.fromisoformat(r["retired_at"]) if r.get("retired_at") else None,
            )
            for r in rows
        ]

    def _write(self, keys: list[ToolKey]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        rows = [
            {"kid": k.kid, "private_pem": k.private_pem, "created_at": k.created_at.isoformat(),
             "retired_at": k.retired_at.isoformat() if k.retired_at else None}
            for k in keys
        ]  # fmt: skip
        tmp = self.path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump({"keys": rows}, f, indent=1)
        os.replace(tmp, self.path)

    def current(self) -> ToolKey:
        """The signing key, generated on first use."""
        with _lock:
            keys = self._read()
            live = [k for k in keys if k.retired_at is None]
            if live:
                return live[-1]
            key = _new_key()
            self._write([*keys, key])
            return key

    def published(self) -> list[ToolKey]:
        """The current key and the retired ones still in their grace period."""
        current = self.current()
        now = utcnow()
        retired = [k for k in self._read() if k.retired_at is not None and k.retired_at + self.grace > now]
        return [current, *retired]

    def jwks(self) -> dict[str, list[dict[str, Any]]]:
        return {"keys": [k.public_jwk() for k in self.published()]}

    def rotate(self) -> ToolKey:
        """A new current key; the old one is retired (published for the grace period); expired ones are dropped."""
        with _lock:
            now = utcnow()
            kept = [
                k if k.retired_at is not None else ToolKey(k.kid, k.private_pem, k.created_at, now)
                for k in self._read()
            ]
            kept = [k for k in kept if k.retired_at is not None and k.retired_at + self.grace > now]
            key = _new_key()
            self._write([*kept, key])
            return key


def key_store(data_dir: Path, grace_s: int) -> KeyStore:
    return KeyStore(data_dir, grace=timedelta(seconds=grace_s))
