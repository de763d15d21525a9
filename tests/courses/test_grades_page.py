"""A student's own gradebook row (sealed by the release policy, as every reader); for staff, the old row address of
another student leads to that student's page (row and submissions). Another student gets 403, another offering's
staff 404."""

from __future__ import annotations

from datetime import timedelta

from fastapi.testclient import TestClient

from app.db import utcnow
from tests.courses.conftest import World
from tests.courses.test_attempts import configure, post
from tests.web.conftest import login


def test_the_row_page_seals_scores_for_the_student_and_lists_submissions_for_staff(client, world: World) -> None:  # type: ignore[no-untyped-def]
    alice = world.people["a:alice"]
    configure(client, world, release_scores="after_due", due_at=(utcnow() + timedelta(days=1)).isoformat())
    sub = post(client, alice, "t1", {"b1": "encoder", "b2": "31"}).json()
    assert sub["status"] == "graded"

    mine = TestClient(client.app)
    login(mine, alice)
    assert f'href="/offerings/{world.a}/grades"' in mine.get(f"/offerings/{world.a}").text
    page = mine.get(f"/offerings/{world.a}/grades")
    assert page.status_code == 200 and "Your grades" in page.text
    t1 = page.text.split("<td>t1 ")[1].split("</tr>")[0]
    assert "not released yet" in t1 and "1 / 3" not in t1  # the score stays sealed until the due date
    assert f'href="/submissions/{sub["id"]}"' in page.text  # her own submission (its page seals itself)

    teacher = TestClient(client.app)
    login(teacher, world.people["a:instructor"])
    book = teacher.get(f"/instructor/sets/basic/gradebook?offering={world.a}").text
    assert f"/offerings/{world.a}/grades/" not in book  # the name links to the student's page, row included
    # An old link to the staff row answers with the student's page, where the row is not sealed for staff.
    moved = teacher.get(f"/offerings/{world.a}/grades/{alice.id}", follow_redirects=False)
    assert moved.status_code == 303 and moved.headers["location"] == f"/offerings/{world.a}/students/{alice.id}"
    row = teacher.get(f"/offerings/{world.a}/grades/{alice.id}")
    assert row.status_code == 200 and "Gradebook row" in row.text and "alice@example.com" in row.text
    staff_t1 = row.text.split('<span class="pid">t1</span>')[1].split("</tr>")[0]
    assert "1 / 3" in staff_t1 and "not released" not in staff_t1
    assert f'href="/submissions/{sub["id"]}"' in row.text
    # A TA who submits too is no student: the students page does not list them, so their row stays here.
    ta = world.people["a:ta"]
    assert post(client, ta, "t1", {"b1": "encoder", "b2": "32"}).json()["status"] == "graded"
    ta_row = teacher.get(f"/offerings/{world.a}/grades/{ta.id}", follow_redirects=False)
    assert ta_row.status_code == 200 and ta.email in ta_row.text
    # The instructor's own id is their own row, as for anyone (no redirect).
    own = teacher.get(f"/offerings/{world.a}/grades/{world.people['a:instructor'].id}", follow_redirects=False)
    assert own.status_code == 200 and "Your grades" in own.text

    # Once the due date has passed, the student sees her score too.
    configure(client, world, due_at=(utcnow() - timedelta(minutes=1)).isoformat())
    released = mine.get(f"/offerings/{world.a}/grades").text.split("<td>t1 ")[1].split("</tr>")[0]
    assert "1 / 3" in released and "not released" not in released

    # No redirect for anyone who may not read her submissions: another student and an observer get 403 here, as
    # before; another offering's instructor 404, in A and in B (where she is no student).
    for key, offering, status in (("a:bob", world.a, 403), ("a:observer", world.a, 403),
                                  ("b:instructor", world.a, 404), ("b:instructor", world.b, 404)):  # fmt: skip
        who = TestClient(client.app)
        login(who, world.people[key])
        resp = who.get(f"/offerings/{offering}/grades/{alice.id}", follow_redirects=False)
        assert resp.status_code == status, key  # B's staff: she is no student of B, so no redirect either
        assert "alice@example.com" not in resp.text and "1 / 3" not in resp.text
