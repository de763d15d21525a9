"""Password hashes: production parameters (argon2id at OWASP's minimum), the suite's cheap ones, and the re-hash of
an older hash at its next successful login (never at a failed one), through the real API on SQLite and PostgreSQL.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from argon2 import PasswordHasher, Type
from sqlalchemy import select

from app import security
from app.courses import accounts
from app.users import service as users
from app.users.models import Role, User

REPO = Path(__file__).resolve().parents[2]
PHC = re.compile(r"^\$argon2id\$v=19\$m=(\d+),t=(\d+),p=(\d+)\$[A-Za-z0-9+/]+\$[A-Za-z0-9+/]+$")
# What every hash was made with before (argon2-cffi's defaults then: RFC 9106's second profile).
OLD = PasswordHasher(type=Type.ID, memory_cost=64 * 1024, time_cost=3, parallelism=4)
PASSWORD = "correct-horse-battery"


def parameters(password_hash: str) -> tuple[int, int, int]:
    match = PHC.match(password_hash)
    assert match, password_hash
    m, t, p = (int(x) for x in match.groups())
    return m, t, p


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    # A fresh interpreter, as `serve` and the CLI start: nothing there calls use_test_hash_parameters().
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)


def test_production_hashes_use_the_chosen_parameters() -> None:
    test_hash = security.hash_password(PASSWORD)
    done = run_python(
        "import sys\n"
        "from app.security import hash_password, password_needs_rehash, verify_password\n"
        "h = hash_password('pw')\n"
        "print(h)\n"
        "print(verify_password('pw', h), password_needs_rehash(h), password_needs_rehash(sys.argv[-1]))\n".replace(
            "sys.argv[-1]", repr(test_hash)
        )
    )
    assert done.returncode == 0, done.stderr
    made, checks = done.stdout.split("\n")[:2]
    assert parameters(made) == (19 * 1024, 2, 1)  # m = 19 MiB, t = 2, p = 1
    # It verifies, needs no re-hash, and a hash at the suite's parameters would be re-hashed at its next login.
    assert checks == "True False True"


def test_the_suite_hashes_cheaply_and_those_hashes_verify() -> None:
    made = security.hash_password(PASSWORD)
    assert parameters(made) == (8, 1, 1)
    assert security.verify_password(PASSWORD, made) and not security.verify_password(PASSWORD + "x", made)
    assert not security.password_needs_rehash(made)


def test_test_parameters_refuse_outside_pytest() -> None:
    done = run_python("from app.security import use_test_hash_parameters as use\nuse()")
    assert done.returncode != 0 and "for the test suite only" in done.stderr


def test_no_production_code_turns_test_parameters_on() -> None:
    callers = [
        path.relative_to(REPO).as_posix()
        for folder in ("app", "graders", "checklibs", "bench", "problems")
        for path in (REPO / folder).rglob("*.py")
        if "use_test_hash_parameters" in path.read_text(encoding="utf-8")
    ]
    assert callers == ["app/security.py"]


def make_student(sessions, password_hash: str) -> int:  # type: ignore[no-untyped-def]
    with sessions() as session:
        user, _ = accounts.create_user(session, email="carol@example.com", role=Role.STUDENT, password=PASSWORD)
        user.password_hash = password_hash
        session.commit()
        return user.id


def stored_hash(sessions, user_id: int) -> str:  # type: ignore[no-untyped-def]
    with sessions() as session:
        value = session.scalar(select(User.password_hash).where(User.id == user_id))
        assert value is not None
        return value


def log_in(client, password: str) -> int:  # type: ignore[no-untyped-def]
    resp = client.post("/api/v1/auth/login", json={"email": "carol@example.com", "password": password})
    return int(resp.status_code)


def test_a_login_rehashes_an_old_hash(client, sessions) -> None:  # type: ignore[no-untyped-def]
    old = OLD.hash(PASSWORD)
    user_id = make_student(sessions, old)
    assert log_in(client, PASSWORD) == 200
    new = stored_hash(sessions, user_id)
    assert new != old and parameters(new) == (8, 1, 1)  # the parameters hash_password uses now (the suite's)
    assert security.verify_password(PASSWORD, new) and not security.verify_password("wrong-password", new)
    # The cookie of that login was derived from the hash stored: it goes on working.
    assert client.get("/api/v1/auth/me").status_code == 200
    # A current hash is left alone.
    assert log_in(client, PASSWORD) == 200 and stored_hash(sessions, user_id) == new


def test_a_failed_login_does_not_rehash(client, sessions) -> None:  # type: ignore[no-untyped-def]
    old = OLD.hash(PASSWORD)
    user_id = make_student(sessions, old)
    assert log_in(client, "wrong-password") == 401
    assert stored_hash(sessions, user_id) == old
    # Nor the right password of a deactivated account.
    with sessions() as session:
        user = session.get(User, user_id)
        user.is_active = False
        session.commit()
    assert log_in(client, PASSWORD) == 401
    assert stored_hash(sessions, user_id) == old


def test_a_rehash_never_brings_back_a_changed_password(sessions) -> None:  # type: ignore[no-untyped-def]
    # A login checked the old password against the hash it read; meanwhile the owner changed the password.
    user_id = make_student(sessions, OLD.hash(PASSWORD))
    with sessions() as late:
        stale = late.get(User, user_id)
        late.commit()
        with sessions() as other:
            other.get(User, user_id).password_hash = security.hash_password("a-new-password")
            other.commit()
        assert users._rehash(late, stale, PASSWORD) is None  # the login fails
        late.commit()
    now = stored_hash(sessions, user_id)
    assert security.verify_password("a-new-password", now) and not security.verify_password(PASSWORD, now)


def test_two_logins_rehashing_at_once_both_succeed(sessions) -> None:  # type: ignore[no-untyped-def]
    user_id = make_student(sessions, OLD.hash(PASSWORD))
    with sessions() as second:
        stale = second.get(User, user_id)
        second.commit()
        with sessions() as first:
            winner = first.get(User, user_id)
            assert users._rehash(first, winner, PASSWORD) is winner
            first.commit()
        # The second one finds the first one's hash stored, checks against it, and its cookie matches it.
        assert users._rehash(second, stale, PASSWORD) is stale
        second.commit()
        assert stale.password_hash == stored_hash(sessions, user_id)
    assert parameters(stored_hash(sessions, user_id)) == (8, 1, 1)
