"""Per-problem overrides of the attempt and release policy on the assignment settings page: saved as the API's
problem_policies, shown again, refused with a clear message when out of range, and in force for the student."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.courses.conftest import World
from tests.courses.test_attempts import post
from tests.web.conftest import login

BASE = {
    "open_at": "",
    "due_at": "",
    "late_penalty_per_day": "",
    "max_late_days": "",
    "max_attempts": "1",
    "cooldown_s": "0",
    "decay_per_attempt": "0",
    "counts": "best",
    "release_scores": "immediately",
    "release_feedback": "immediately",
    "release_explanation": "immediately",
    "release_answer_key": "after_attempts",
    "per_problem": "shown",
}


def test_per_problem_settings_are_saved_from_the_page_and_apply(client, world: World) -> None:  # type: ignore[no-untyped-def]
    teacher = TestClient(client.app)
    csrf = login(teacher, world.people["a:instructor"])
    url = f"/assignments/{world.assignment_a}/settings"
    page = teacher.get(url).text
    assert 'name="problem.t1.max_attempts"' in page and 'aria-label="t2 answer key"' in page

    form = {**BASE, "csrf_token": csrf, "problem.t1.max_attempts": "2", "problem.t1.answer_key": "never",
            "problem.t2.counts": "last"}  # fmt: skip
    saved = teacher.post(url, data=form)
    assert saved.status_code == 200 and "Saved." in saved.text
    api = client.get(f"/api/v1/assignments/{world.assignment_a}", headers=world.people["a:instructor"].headers)
    assert api.json()["problem_policies"] == {
        "t1": {"max_attempts": 2, "release": {"answer_key": "never"}},
        "t2": {"counts": "last"},
    }
    shown = teacher.get(url).text
    assert 'name="problem.t1.max_attempts" size="5" aria-label="t1 attempts" value="2"' in shown
    answer_key = shown.split('name="problem.t1.answer_key"')[1].split("</select>")[0]
    assert '<option value="never" selected>never</option>' in answer_key

    bad = teacher.post(url, data={**form, "problem.t3.decay_per_attempt": "2"})
    assert bad.status_code == 422 and "problem_policies.t3.decay_per_attempt is a fraction between 0 and 1" in bad.text
    assert client.get(f"/api/v1/assignments/{world.assignment_a}",
                      headers=world.people["a:instructor"].headers).json()["problem_policies"]["t1"]  # fmt: skip

    alice = world.people["a:alice"]
    assert post(client, alice, "t1", {"b1": "encoder", "b2": "31"}).status_code == 202
    assert post(client, alice, "t1", {"b1": "encoder", "b2": "31"}).status_code == 202  # t1's own limit: 2
    assert post(client, alice, "t1", {"b1": "encoder", "b2": "31"}).status_code == 429
    assert post(client, alice, "t2", {"b1": "B"}).status_code == 202
    assert post(client, alice, "t2", {"b1": "B"}).status_code == 429  # the assignment's limit: 1

    # Clearing the cells puts every problem back on the assignment's settings.
    teacher.post(url, data={**BASE, "csrf_token": csrf})
    api = client.get(f"/api/v1/assignments/{world.assignment_a}", headers=world.people["a:instructor"].headers)
    assert api.json()["problem_policies"] == {}
