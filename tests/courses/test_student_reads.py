"""Students read only what is open (issue 22 item 6): an assignment before its open date is a 404 to its students,
and the problem_set filter of the submissions list finds a student's submissions of an unpinned assignment."""

from __future__ import annotations

from datetime import timedelta

from app.courses.models import Assignment
from app.db import utcnow
from app.problemsets.models import ProblemSetVersion
from tests.app.conftest import submit_as
from tests.courses.conftest import World


def _open_at(sessions, assignment_id: int, delta: timedelta) -> None:  # type: ignore[no-untyped-def]
    with sessions() as session:
        row = session.get(Assignment, assignment_id)
        assert row is not None
        row.open_at = utcnow() + delta
        session.commit()


def test_an_assignment_before_its_open_date_is_a_404_to_its_students(client, world: World, sessions) -> None:  # type: ignore[no-untyped-def]
    url = f"/api/v1/assignments/{world.assignment_b}"
    _open_at(sessions, world.assignment_b, timedelta(days=2))
    student = client.get(url, headers=world.people["b:student"].headers)
    assert student.status_code == 404, student.text
    assert client.get(url, headers=world.people["b:observer"].headers).status_code == 404  # not staff either
    missing = client.get("/api/v1/assignments/999999", headers=world.people["b:student"].headers)
    assert student.json()["detail"][0]["msg"].replace(str(world.assignment_b), "N") == missing.json()["detail"][0][
        "msg"
    ].replace("999999", "N")  # the same answer as an assignment that does not exist
    # A change attempt reads the same, not a 403 that would say it is there.
    patch = client.patch(url, json={"max_attempts": 9}, headers=world.people["b:student"].headers)
    assert patch.status_code == 404
    for staff in ("b:instructor", "b:ta"):
        shown = client.get(url, headers=world.people[staff].headers)
        assert shown.status_code == 200 and shown.json()["open_at"] is not None
    _open_at(sessions, world.assignment_b, timedelta(seconds=-1))
    assert client.get(url, headers=world.people["b:student"].headers).status_code == 200  # open now


def test_the_problem_set_filter_finds_a_students_submissions_of_an_unpinned_assignment(  # type: ignore[no-untyped-def]
    client, world: World, sessions, settings
) -> None:
    student = world.people["b:student"]
    with sessions() as session:
        sub_id = submit_as(session, settings, student.id, "basic", "t2", answers={"b1": "B"}).id
        session.commit()
    for params in ({"problem_set": "basic"}, {"problem_set": "basic", "offering": str(world.b)}, {}):
        listed = client.get("/api/v1/submissions", params=params, headers=student.headers)
        assert listed.status_code == 200 and [s["id"] for s in listed.json()] == [sub_id], (params, listed.text)
    other = client.get("/api/v1/submissions", params={"problem_set": "other"}, headers=student.headers)
    assert other.status_code == 200 and other.json() == []
    # Staff of B see it through the filter too; staff of A (the same set, another offering) do not.
    staff = client.get("/api/v1/submissions", params={"problem_set": "basic"}, headers=world.people["b:ta"].headers)
    assert sub_id in [s["id"] for s in staff.json()]
    a_side = client.get("/api/v1/submissions", params={"problem_set": "basic"},
                        headers=world.people["a:instructor"].headers)  # fmt: skip
    assert sub_id not in [s["id"] for s in a_side.json()]
    # Pinned to a version (the one case that worked before), still found.
    with sessions() as session:
        row = session.get(Assignment, world.assignment_b)
        assert row is not None
        versions = session.query(ProblemSetVersion.id).filter_by(problem_set_id=row.problem_set_id)
        row.pinned_version_id = versions.scalar()
        session.commit()
    listed = client.get("/api/v1/submissions", params={"problem_set": "basic"}, headers=student.headers)
    assert [s["id"] for s in listed.json()] == [sub_id]
