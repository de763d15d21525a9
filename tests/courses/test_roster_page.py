"""One person on the roster page: added by email with a name, role and section; their role changed and the drop
done only after the confirmation step; a section move; a TA, an observer and a student refused as the permission
matrix says (the API's rule: ROSTER is the instructors'). The roster's name is the gradebook's name, and its CSV's."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from app.courses.models import Membership, MemberStatus
from tests.courses.conftest import World
from tests.web.conftest import login

# One app per module and backend (tests/conftest.py): each test starts from emptied rows and no cookie, and
# none changes the app's settings or leaves work running.
pytestmark = pytest.mark.shared_app


def _browser(client: TestClient) -> TestClient:
    return TestClient(client.app)


def _member(sessions, offering_id: int, email: str) -> Membership | None:  # type: ignore[no-untyped-def]
    with sessions() as session:
        found = session.query(Membership).filter_by(offering_id=offering_id, email=email).one_or_none()
        if found is not None:
            session.expunge(found)
        return found


def _add(http: TestClient, token: str, offering: int, **fields: str):  # type: ignore[no-untyped-def]
    data = {"csrf_token": token, "email": "", "name": "", "role": "student", "section": "", "student_id": "", **fields}
    return http.post(f"/offerings/{offering}/members", data=data, follow_redirects=False)


def test_an_instructor_adds_re_roles_moves_and_drops_one_person(client, sessions, world: World) -> None:  # type: ignore[no-untyped-def]
    teacher = _browser(client)
    token = login(teacher, world.people["b:instructor"])
    page = teacher.get(f"/offerings/{world.b}/roster")
    assert page.status_code == 200 and "Add one person" in page.text

    added = _add(teacher, token, world.b, email="Zhang.Wei@Example.com", name="张伟", role="student", section="S1")
    assert added.status_code == 303, added.text[-500:]
    zhang = _member(sessions, world.b, "zhang.wei@example.com")
    assert zhang is not None and (zhang.name, zhang.role, zhang.section, zhang.status) == ("张伟", "student", "S1",
                                                                                         "invited")  # fmt: skip
    roster = teacher.get(added.headers["location"])
    assert "Saved: 张伟 is student (invited)." in roster.text
    assert 'aria-label="Change 张伟"' in roster.text
    again = _add(teacher, token, world.b, email="zhang.wei@example.com", role="ta")
    assert again.status_code == 422 and "on the roster already" in again.text
    assert _member(sessions, world.b, "zhang.wei@example.com").role == "student"  # type: ignore[union-attr]
    bad = _add(teacher, token, world.b, email="not-an-address", name="Kept")
    assert bad.status_code == 422 and 'value="Kept"' in bad.text  # the form keeps what was typed

    url = f"/offerings/{world.b}/members/{zhang.id}"
    assert teacher.get(url).status_code == 200
    # A section move alone is written at once.
    moved = teacher.post(url, data={"csrf_token": token, "do": "save", "role": "student", "section": "S2"},
                         follow_redirects=False)  # fmt: skip
    assert moved.status_code == 303 and _member(sessions, world.b, zhang.email).section == "S2"  # type: ignore[union-attr]
    # A role change asks first; nothing is written until it is confirmed.
    asked = teacher.post(url, data={"csrf_token": token, "do": "save", "role": "ta", "section": "S2"})
    assert asked.status_code == 200 and "Change the role of 张伟 from student to TA?" in asked.text
    assert _member(sessions, world.b, zhang.email).role == "student"  # type: ignore[union-attr]
    confirmed = teacher.post(url, data={"csrf_token": token, "do": "save", "role": "ta", "section": "S2",
                                        "confirm": "yes"}, follow_redirects=False)  # fmt: skip
    assert confirmed.status_code == 303 and _member(sessions, world.b, zhang.email).role == "ta"  # type: ignore[union-attr]
    # A drop without the confirmation does nothing but ask.
    ask_drop = teacher.post(url, data={"csrf_token": token, "do": "drop"})
    assert ask_drop.status_code == 200 and "Yes, drop 张伟" in ask_drop.text
    assert _member(sessions, world.b, zhang.email).status == MemberStatus.INVITED  # type: ignore[union-attr]
    dropped = teacher.post(url, data={"csrf_token": token, "do": "drop", "confirm": "yes"}, follow_redirects=False)
    assert dropped.status_code == 303 and _member(sessions, world.b, zhang.email).status == MemberStatus.DROPPED  # type: ignore[union-attr]
    # Bringing back someone without an account is refused with the service's reason (invited until they accept).
    back = teacher.post(url, data={"csrf_token": token, "do": "reactivate"})
    assert back.status_code == 422 and "stays invited until they accept" in back.text

    # Without the CSRF token nothing is written.
    forged = teacher.post(url, data={"do": "drop", "confirm": "yes"}, follow_redirects=False)
    assert forged.status_code in (400, 403)


def test_a_dropped_student_is_dropped_and_brought_back(client, sessions, world: World) -> None:  # type: ignore[no-untyped-def]
    teacher = _browser(client)
    token = login(teacher, world.people["b:instructor"])
    student = _member(sessions, world.b, "student-b@example.com")
    assert student is not None
    url = f"/offerings/{world.b}/members/{student.id}"
    teacher.post(url, data={"csrf_token": token, "do": "drop", "confirm": "yes"})
    pupil = _browser(client)
    login(pupil, world.people["b:student"])
    assert pupil.get(f"/offerings/{world.b}").status_code in (403, 404)
    back = teacher.post(url, data={"csrf_token": token, "do": "reactivate"}, follow_redirects=False)
    assert back.status_code == 303 and _member(sessions, world.b, student.email).status == MemberStatus.ACTIVE  # type: ignore[union-attr]
    assert pupil.get(f"/offerings/{world.b}").status_code == 200


def test_staff_without_the_roster_permission_are_refused(client, sessions, world: World) -> None:  # type: ignore[no-untyped-def]
    student = _member(sessions, world.b, "student-b@example.com")
    assert student is not None
    url = f"/offerings/{world.b}/members/{student.id}"
    for who in ("b:ta", "b:observer", "b:student", "a:instructor"):
        http = _browser(client)
        token = login(http, world.people[who])
        roster = http.get(f"/offerings/{world.b}/roster")
        if who in ("b:ta", "b:observer"):  # they read the roster (GRADEBOOK) but may not change it
            assert roster.status_code == 200 and "Add one person" not in roster.text and url not in roster.text
        assert http.get(url).status_code in (403, 404), who
        added = _add(http, token, world.b, email=f"{who.replace(':', '-')}-friend@example.com")
        assert added.status_code in (403, 404), who
        for data in ({"do": "drop", "confirm": "yes"}, {"do": "save", "role": "instructor", "confirm": "yes"}):
            assert http.post(url, data={"csrf_token": token, **data}).status_code in (403, 404), who
    assert _member(sessions, world.b, "b-ta-friend@example.com") is None
    after = _member(sessions, world.b, student.email)
    assert after is not None and (after.role, after.status) == ("student", MemberStatus.ACTIVE)


def test_the_roster_name_is_the_gradebook_name_and_in_its_csv(client, sessions, world: World) -> None:  # type: ignore[no-untyped-def]
    student = _browser(client)
    stoken = login(student, world.people["a:alice"])
    answers = {"csrf_token": stoken, "offering": str(world.a), "answer.b1": "encoder", "answer.b2": "31"}
    resp = student.post("/sets/basic/problems/t1", data=answers, follow_redirects=False)
    assert resp.status_code == 303, resp.text[-300:]
    with sessions() as session:
        alice = session.query(Membership).filter_by(offering_id=world.a, email="alice@example.com").one()
        alice.name = "Alice Liddell"
        session.commit()
    teacher = _browser(client)
    login(teacher, world.people["a:instructor"])
    headers = {"Authorization": f"Bearer {world.people['a:instructor'].token}"}
    csv_text = teacher.get(f"/api/v1/gradebook/basic.csv?offering={world.a}", headers=headers)
    assert csv_text.status_code == 200, csv_text.text[-300:]
    assert re.search(r"^alice@example\.com,Alice Liddell,", csv_text.text, re.M), csv_text.text[:300]
    page = teacher.get(f"/instructor/sets/basic/gradebook?offering={world.a}")
    assert page.status_code == 200 and "Alice Liddell" in page.text
