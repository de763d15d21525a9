"""Password and API-token hashing. Passwords: argon2id. Tokens: random 256-bit values, stored as SHA-256."""

from __future__ import annotations

import hashlib
import logging
import secrets
import sys
from functools import lru_cache
from typing import TypedDict

from argon2 import PasswordHasher, Type
from argon2.exceptions import InvalidHashError, VerificationError

log = logging.getLogger(__name__)


class Cost(TypedDict):
    memory_cost: int  # KiB
    time_cost: int  # passes
    parallelism: int  # lanes (threads)


# argon2id at OWASP's minimum (m = 19 MiB, t = 2, p = 1), not RFC 9106's second profile (m = 64 MiB, t = 3, p = 4,
# argon2-cffi's default, used here before): on these 2 cores one check cost 27 ms of CPU against 219 ms, 8x less
# (300 verifies each, `python -m bench.bench_password_hash`). At login the CPU of argon2 is what a class waits for:
# the checks run two per core (app.users.password_checks), so 300 logins queue behind each other's hashes. One lane
# (p = 1) also suits that queue: a few one-thread checks at once, not four threads per check on two cores.
# Older hashes (any other parameters) are re-hashed at their next successful login (app.users.service).
PRODUCTION_PARAMETERS = Cost(memory_cost=19 * 1024, time_cost=2, parallelism=1)
_hasher = PasswordHasher(type=Type.ID, **PRODUCTION_PARAMETERS)
# The cheapest argon2id allows (8 KiB, one pass): for test set-ups only, through use_test_hash_parameters().
TEST_PARAMETERS = Cost(memory_cost=8, time_cost=1, parallelism=1)
TOKEN_PREFIX = "agt_"  # noqa: S105 - a public marker, not a secret


@lru_cache(maxsize=1)
def _dummy_hash() -> str:
    """A real hash to verify against when the user does not exist, so timing does not reveal which emails exist."""
    return _hasher.hash("not-a-real-password")


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def verify_password(password: str, password_hash: str | None) -> bool:
    # argon2 reads the parameters from the hash itself: a hash made with other parameters (older, or the tests')
    # still verifies.
    try:
        return _hasher.verify(password_hash or _dummy_hash(), password) and password_hash is not None
    except (VerificationError, InvalidHashError):
        return False


def password_needs_rehash(password_hash: str) -> bool:
    """Whether a hash that just verified was made with other parameters than the ones hash_password uses now."""
    try:
        return _hasher.check_needs_rehash(password_hash)
    except InvalidHashError:  # not argon2 at all: nothing verified it, so nothing to re-hash with
        return False


def use_test_hash_parameters() -> None:
    """Hash passwords at the cheapest argon2id cost from now on, in this process: the test suite's set-ups only.

    A function the test conftest calls, not a setting or an environment variable, so that no deployment can turn
    it on by a stray variable; and it refuses outside a pytest run. A hash made with these parameters still
    verifies, and outside the tests it is re-hashed at its next login (password_needs_rehash).
    """
    global _hasher
    if "pytest" not in sys.modules:
        raise RuntimeError("test hash parameters are for the test suite only (pytest is not running)")
    log.warning("password hashes use TEST parameters %s: never in production", TEST_PARAMETERS)
    _hasher = PasswordHasher(type=Type.ID, **TEST_PARAMETERS)
    _dummy_hash.cache_clear()


def generate_password() -> str:
    return secrets.token_urlsafe(12)


def generate_token() -> str:
    """A new API token; shown to its owner once, then only its hash is kept."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    # Tokens carry 256 bits of randomness, so a fast hash is enough (no dictionary to attack); it also lets us
    # look a token up by its hash.
    return hashlib.sha256(token.encode()).hexdigest()
