"""Password and API-token hashing. Passwords: argon2id. Tokens: random 256-bit values, stored as SHA-256."""

from __future__ import annotations

import hashlib
import secrets
from functools import lru_cache

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

_hasher = PasswordHasher()
TOKEN_PREFIX = "agt_"  # noqa: S105 - a public marker, not a secret


@lru_cache(maxsize=1)
def _dummy_hash() -> str:
    """A real hash to verify against when the user does not exist, so timing does not reveal which emails exist."""
    return _hasher.hash("not-a-real-password")


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def verify_password(password: str, password_hash: str | None) -> bool:
    try:
        return _hasher.verify(password_hash or _dummy_hash(), password) and password_hash is not None
    except (VerificationError, InvalidHashError):
        return False


def generate_password() -> str:
    return secrets.token_urlsafe(12)


def generate_token() -> str:
    """A new API token; shown to its owner once, then only its hash is kept."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    # Tokens carry 256 bits of randomness, so a fast hash is enough (no dictionary to attack); it also lets us
    # look a token up by its hash.
    return hashlib.sha256(token.encode()).hexdigest()
