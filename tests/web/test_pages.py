"""Student pages through the real app: the set page and its forms, submitting, feedback, history, access."""

from __future__ import annotations

import re

import pytest

from tests.web.conftest import login, wait_graded

# One app per module and backend (tests/conftest.py): each test starts from emptied rows and no cookie, and
# none changes the app's settings or leaves work running.
pytestmark = pytest.mark.shared_app


def submit_form(client, token, problem, data):  # type: ignore[no-untyped-def]
    return client.post(f"/sets/basic/problems/{problem}", data={**data, "csrf_token": token}, follow_redirects=False)


def test_set_page_has_one_input_per_part(as_alice):  # type: ignore[no-untyped-def]
    client, _ = as_alice
    html = client.get("/sets/basic").text
    assert 'name="answer.b1"' in html and 'name="answer.b2"' in html
    assert "word or phrase" in html and "number" in html  # the part kind as a hint
    assert re.search(r'type="radio" name="answer.b1" value="B"', html)  # t2 is single choice
    assert re.search(r'<textarea id="t3-b1" name="answer.b1"', html)  # t3 is an essay
    assert "katex.min.js" in html and 'lang="zh"' in html


def test_fill_in_form_end_to_end(as_alice):  # type: ignore[no-untyped-def]
    client, token = as_alice
    resp = submit_form(client, token, "t1", {"answer.b1": "编码器", "answer.b2": "31"})
    assert resp.status_code == 303
    sub_id = int(resp.headers["location"].rsplit("/", 1)[1])
    html = wait_graded(client, sub_id)
    assert 'http-equiv="refresh"' not in html
    assert re.search(r'class="score">1</span><span class="of"> / 3', html)
    assert "✓" in html and "✗" in html and "not the expected value" in html
    # The explanation waits for the answer key, released by default once the attempts run out or at full marks.
    assert "The encoder" not in html
    assert "编码器" in html  # what was sent, in UTF-8
    history = client.get("/history").text
    assert f"/submissions/{sub_id}" in history
    assert "Best so far" in client.get("/sets/basic").text


def test_choice_form_scores_full_marks(as_alice):  # type: ignore[no-untyped-def]
    client, token = as_alice
    resp = submit_form(client, token, "t2", {"answer.b1": "B"})
    html = wait_graded(client, int(resp.headers["location"].rsplit("/", 1)[1]))
    assert re.search(r'class="score">2</span><span class="of"> / 2', html) and "accepted" in html


def test_bad_input_re_renders_the_form_with_a_message(as_alice):  # type: ignore[no-untyped-def]
    client, token = as_alice
    empty = submit_form(client, token, "t1", {"answer.b1": " ", "answer.b2": ""})
    assert empty.status_code == 422 and "Fill in at least one answer" in empty.text
    assert 'name="answer.b1"' in empty.text and "Traceback" not in empty.text
    unknown = submit_form(client, token, "q9", {"answer.b1": "x"})
    assert unknown.status_code == 422 and "no problem" in unknown.text
    too_long = submit_form(client, token, "t1", {"answer.b1": "x" * 10_001, "answer.b2": "2"})
    assert too_long.status_code == 422 and "longer than" in too_long.text
    assert client.get("/sets/nope").status_code == 404
    assert client.get("/submissions/abc").status_code == 422


def test_students_see_only_their_own_and_no_instructor_pages(client, accounts, basic_set):  # type: ignore[no-untyped-def]
    token = login(client, accounts["alice"])
    sub_id = int(submit_form(client, token, "t2", {"answer.b1": "A"}).headers["location"].rsplit("/", 1)[1])
    assert client.get(f"/submissions/{sub_id}").status_code == 200
    for path in ("/instructor", "/instructor/sets/basic/gradebook"):
        resp = client.get(path)
        assert resp.status_code == 403 and "for instructors" in resp.text
    assert client.post(f"/submissions/{sub_id}/regrade", data={"csrf_token": token}).status_code == 403
    assert client.get("/api/v1/gradebook/basic").status_code == 403
    client.post("/logout", data={"csrf_token": token})

    login(client, accounts["bob"])
    resp = client.get(f"/submissions/{sub_id}")
    assert resp.status_code == 404 and "no submission" in resp.text
    assert f"/submissions/{sub_id}" not in client.get("/history").text
