"""The checker's jail, attacked through a bulk regrade's trial run, which grades in a background thread of the API
process itself (app.gradebook.trial_regrade, app.web.trial_jobs): next to the app's secret key file and database.

The hostile set passes the gate (its attacks wait for an armed student file, tests/sandbox/test_checker_attacks.py);
the trial then grades a stored armed program and an honest one. Every attempt must fail (the armed program is
predicted at the honest check's one point), the honest one is predicted at full marks (the trial grades on after
the attacks), nothing read appears on the trial's page, and the API process answers on.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from app.courses import course_sets
from tests.courses.conftest import world  # noqa: F401
from tests.sandbox import support
from tests.sandbox.test_checker_attacks import ARMED, ATTACKS, _write_set
from tests.web.conftest import login
from tests.web.test_trial_regrade import RIGHT, _numbers, _stored, _until_done

KILLS_THE_SERVICE = {"kills_the_service": "os.kill(SERVICE_PID, signal.SIGKILL)\nreturn 'killed'"}
FULL = 1 + len(ATTACKS) + len(KILLS_THE_SERVICE)


@pytest.fixture
def database_url(tmp_path: Path, sqlite_template: Path) -> str:
    # SQLite only: the attack reads the database file, which a PostgreSQL deployment does not have beside it.
    path = tmp_path / "served.db"
    path.write_bytes(sqlite_template.read_bytes())
    return f"sqlite:///{path}"


def test_a_trial_regrade_of_an_armed_program_reaches_nothing(client, world, sessions, settings, tmp_path):  # type: ignore[no-untyped-def]  # noqa: F811
    support.require_jail()
    secret = settings.resolved_secret_key()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    key_file = settings.data_dir / "secret_key"  # where the app keeps a generated key
    key_file.write_text(secret)
    key_file.chmod(0o600)
    targets: dict[str, Any] = {
        "SECRET": secret,
        "SECRET_FILE": str(key_file),
        "DB_FILE": str(tmp_path / "served.db"),
        "SERVICE_PID": os.getpid(),  # the TestClient runs the app, and so the trial's thread, in this process
        "OUTSIDE": str(tmp_path / "escaped.txt"),
    }
    root = _write_set(tmp_path / "hostile", targets, armed_only=True, extra=KILLS_THE_SERVICE)

    with sessions() as session:  # through the app's own grader: the gate the upload runs
        _, report, _ = course_sets.load_dir(session, root=root, grader=client.app.state.code_grader, max_grading_s=600)
        session.commit()
    assert report.ok and report.points["c1"] == FULL, report.to_dict()
    alice, bob = world.people["a:alice"].id, world.people["a:bob"].id
    _stored(sessions, "hostile", "c1", [(alice, {"code": ARMED}, 0.0, None), (bob, {"code": RIGHT}, 0.0, None)])

    token = login(client, world.people["a:instructor"])
    url = f"/instructor/sets/hostile/regrade/trial?offering={world.a}"
    form = {"problem": "c1", "since": "", "below_full": "", "expected": "2", "csrf_token": token}
    started = client.post(url, data=form, follow_redirects=False)
    assert started.status_code == 303, started.text
    live = _until_done(client, started.headers["location"], limit_s=600)
    assert "Trial run: 2 of 2 graded · done" in live.text and "could not be graded" not in live.text
    _, _, _, _, predicted = _numbers(live.text)
    # The armed program keeps the honest check's point alone: every attempt failed; the honest one has them all.
    assert predicted == {("0", "1"): 1, ("0", f"{FULL:g}"): 1}, predicted
    assert secret not in live.text and "SQLite format" not in live.text
    assert not Path(targets["OUTSIDE"]).exists()
    assert not list((root / "checks").glob("*.planted"))
    assert client.get("/healthz").status_code == 200
