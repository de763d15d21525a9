"""The instructor's view of one student's submissions, scoped by the permission matrix."""

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
