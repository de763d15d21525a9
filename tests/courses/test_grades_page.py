"""A student's own gradebook row (sealed by the release policy, as every reader) and, for staff, each student's
row with their submissions, linked from the gradebook. Another student gets 403, another offering's staff 404."""

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
    assert f'href="/offerings/{world.a}/grades/{alice.id}"' in book
    row = teacher.get(f"/offerings/{world.a}/grades/{alice.id}")
    assert row.status_code == 200 and "Grades of" in row.text and "alice@example.com" in row.text
    staff_t1 = row.text.split("<td>t1 ")[1].split("</tr>")[0]
    assert "1 / 3" in staff_t1 and "not released" not in staff_t1
    assert f'href="/submissions/{sub["id"]}"' in row.text and "attempt 1" in row.text

    # Once the due date has passed, the student sees her score too.
    configure(client, world, due_at=(utcnow() - timedelta(minutes=1)).isoformat())
    released = mine.get(f"/offerings/{world.a}/grades").text.split("<td>t1 ")[1].split("</tr>")[0]
    assert "1 / 3" in released and "not released" not in released

    bob = TestClient(client.app)
    login(bob, world.people["a:bob"])
    assert bob.get(f"/offerings/{world.a}/grades/{alice.id}").status_code == 403
    other = TestClient(client.app)
    login(other, world.people["b:instructor"])
    assert other.get(f"/offerings/{world.a}/grades/{alice.id}").status_code == 404
    assert other.get(f"/offerings/{world.b}/grades/{alice.id}").status_code == 404  # not in offering B
