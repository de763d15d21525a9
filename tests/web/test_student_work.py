"""The staff page of one student: their gradebook row, then their submissions, scoped by the permission matrix."""

from __future__ import annotations

from tests.courses.conftest import world  # noqa: F401
from tests.web.conftest import login


def test_one_students_work_for_staff_of_their_offering_only(client, world):  # type: ignore[no-untyped-def]  # noqa: F811
    alice = world.people["a:alice"]
    wrong = {"problem_set": "basic", "problem": "t1", "answers": {"b1": "Decoder", "b2": "32"}, "offering": world.a}
    right = {**wrong, "answers": {"b1": "Encoder", "b2": "32"}}
    ids = [client.post("/api/v1/submissions", json=body, headers=alice.headers, params={"wait": 10}).json()["id"]
           for body in (wrong, right)]  # fmt: skip

    login(client, world.people["a:instructor"])
    book = client.get(f"/instructor/sets/basic/gradebook?offering={world.a}").text
    page_url = f"/offerings/{world.a}/students/{alice.id}"
    assert f'href="{page_url}"' in book
    page = client.get(page_url)
    assert page.status_code == 200 and "alice@example.com" in page.text and "Basic test set" in page.text
    assert all(f'href="/submissions/{i}"' in page.text for i in ids)
    assert page.text.count("✓ counted") == 1  # the better attempt is the one the gradebook counts
    # A staff member is no student here, and a student of offering B is not in A.
    assert client.get(f"/offerings/{world.a}/students/{world.people['a:ta'].id}").status_code == 404
    assert client.get(f"/offerings/{world.a}/students/{world.people['b:student'].id}").status_code == 404

    # Staff of offering B, an observer of A and a student get nothing of A's students.
    for key, status in (("b:instructor", 404), ("b:ta", 404), ("a:observer", 403), ("a:bob", 403)):
        client.cookies.clear()
        login(client, world.people[key])
        resp = client.get(page_url)
        assert resp.status_code == status, key
        assert "alice@example.com" not in resp.text
    # The observer reads A's gradebook page (the course home links it), where names and scores are text: no link to
    # a student's work or a submission, which would be a 403; B's observer gets nothing of A's gradebook.
    client.cookies.clear()
    login(client, world.people["a:observer"])
    observed = client.get(f"/instructor/sets/basic/gradebook?offering={world.a}")
    assert observed.status_code == 200 and "alice@example.com" in observed.text
    assert f'href="{page_url}"' not in observed.text and 'href="/submissions/' not in observed.text
    assert f"/offerings/{world.a}/grades/" not in observed.text
    client.cookies.clear()
    login(client, world.people["b:observer"])
    assert client.get(f"/instructor/sets/basic/gradebook?offering={world.a}").status_code == 404
    client.cookies.clear()
    login(client, world.people["a:ta"])  # a TA of A reads them
    assert "alice@example.com" in client.get(page_url).text


def test_the_row_comes_first_and_counts_as_the_gradebook(client, world):  # type: ignore[no-untyped-def]  # noqa: F811
    """The row's score per problem is the counted attempt's, a hand-graded problem still waiting shows "pending" and
    stays out of the total (as in the gradebook); each submission is listed below the row."""
    alice = world.people["a:alice"]
    bodies = [
        {"problem": "t1", "answers": {"b1": "Encoder", "b2": "31"}},  # 1 of 3
        {"problem": "t1", "answers": {"b1": "Encoder", "b2": "32"}},  # 3 of 3: counted (best)
        {"problem": "t1", "answers": {"b1": "Decoder", "b2": "31"}},  # 0 of 3
        {"problem": "t2", "answers": {"b1": "B"}},  # 2 of 2
        {"problem": "t3", "answers": {"b1": "We held the split equal."}},  # awaits hand grading
    ]
    ids = [client.post("/api/v1/submissions", json={"problem_set": "basic", "offering": world.a, **body},
                       headers=alice.headers, params={"wait": 10}).json()["id"] for body in bodies]  # fmt: skip
    login(client, world.people["a:instructor"])
    page = client.get(f"/offerings/{world.a}/students/{alice.id}").text
    row, work = page.split('<section class="card" aria-labelledby="set-basic">')
    assert "Gradebook row" in row and "student-work" not in row
    cells = {pid: row.split(f'<span class="pid">{pid}</span>')[1].split("</tr>")[0] for pid in ("t1", "t2", "t3")}
    assert "3 / 3" in cells["t1"] and '<td class="num">3</td>' in cells["t1"]  # counted score; 3 attempts
    assert "2 / 2" in cells["t2"] and "pending / 3" in cells["t3"]
    total = row.split("<tfoot>")[1].split("</tfoot>")[0]
    assert "<strong>5</strong> / 8" in total and "hand grading still pending is left out of the total" in total
    assert all(f'href="/submissions/{i}"' in work for i in ids) and work.count("✓ counted") == 3
