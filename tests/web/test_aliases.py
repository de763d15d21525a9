"""Accept a common wrong answer in one click: the gradebook's button makes a new version with the alias, through
the upload gate, and links to the regrade preview; what makes no sense is refused with nothing stored."""

from __future__ import annotations

import io
import re
import shutil
import tarfile
import time
from html import unescape

import pytest
from sqlalchemy import select

from app.courses import course_sets
from app.courses.models import Assignment
from app.errors import Conflict, Invalid
from app.problemsets import service as sets
from app.problemsets.aliases import edited_spec, takes_alias
from app.problemsets.models import ProblemSetVersion
from graders.answers.registry import grade_part
from graders.answers.specs import TextSpec
from graders.model import FillInProblem
from graders.problemset.loader import load_problem_set, parse_spec
from tests.conftest import FIXTURE_SETS, REPO
from tests.courses.conftest import world  # noqa: F401
from tests.gradebook.conftest import submit
from tests.web.conftest import login

GRADEBOOK = "/instructor/sets/basic/gradebook"


def test_the_edit_adds_two_lines_and_keeps_the_file_as_written() -> None:
    text = (REPO / "problems/ch9/problemset.yaml").read_text(encoding="utf-8")
    # q1 b3: a block list of aliases followed by a comment that belongs to the regex under it.
    edited = edited_spec(text, 0, 2, "想查的: 信息")
    added = [line for line in edited.splitlines() if line not in text.splitlines()]
    removed = [line for line in text.splitlines() if line not in edited.splitlines()]
    assert added == ['          - "想查的: 信息"', removed[0].replace("]", ', "想查的: 信息"]')]
    assert len(removed) == 1 and removed[0].strip().startswith("accept:")
    lines = edited.splitlines()
    assert lines.index('          - "想查的: 信息"') < next(i for i, line in enumerate(lines) if "# 覆盖" in line)
    problem = parse_spec(edited.encode()).problems[0]
    assert isinstance(problem, FillInProblem)
    part = problem.parts[2]
    assert isinstance(part, TextSpec) and grade_part("想查的: 信息", part).correct


def test_a_part_with_only_a_regex_gets_its_first_alias() -> None:
    text = "problems:\n  - id: q\n    parts:\n      - kind: text   # why\n        regex: 'a+'\n"
    edited = edited_spec(text, 0, 0, "b")
    assert "# why" in edited and 'answers: ["b"]' in edited and 'accept: ["b"]' in edited


def test_the_alias_joins_the_list_its_answer_kind_names() -> None:
    # AnswerKind.aliases: a kind whose accepted answers are another field gets the alias there, not in "answers".
    text = "problems:\n  - id: q\n    parts:\n      - kind: term\n        synonyms: [a]\n"
    edited = edited_spec(text, 0, 0, "b", field="synonyms")
    assert 'synonyms: [a, "b"]' in edited and 'accept: ["b"]' in edited and "answers" not in edited


def test_only_kinds_that_say_so_take_aliases() -> None:
    loaded = load_problem_set(FIXTURE_SETS / "basic")
    seen = set()
    for problem in loaded.spec.problems:
        for spec in problem.answer_parts():
            expected = problem.kind == "fill_in" and spec.kind == "text"  # the built-in kinds that do
            assert takes_alias(problem, spec) is expected, (problem.id, spec.kind)
            seen.add(expected)
    assert seen == {True, False}


def _wrong_answers_given(client, accounts) -> None:  # type: ignore[no-untyped-def]
    submit(client, accounts["alice"], "t1", {"b1": "编码部分", "b2": "32"})
    submit(client, accounts["bob"], "t1", {"b1": " 编码部分。", "b2": "32"})  # the same answer, as the grader reads it
    submit(client, accounts["bob"], "t1", {"b1": "decoder", "b2": "32"})  # a known-wrong example of the set


def _finish(client, page_url: str) -> str:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if client.get(page_url + "/live").headers["X-Progress"] == "done":
            break
        time.sleep(0.05)
    return str(client.get(page_url).text)


def _versions(sessions) -> list[int]:  # type: ignore[no-untyped-def]
    with sessions() as session:
        return list(session.scalars(select(ProblemSetVersion.number).order_by(ProblemSetVersion.number)))


def _alias_form(html: str, answer: str) -> dict[str, str]:
    match = re.search(r'<form method="post" action="([^"]+/aliases[^"]*)"(.*?)</form>', html, re.S)
    assert match, "no alias form on the page"
    forms = re.findall(r'<form method="post" action="([^"]+/aliases[^"]*)"(.*?)</form>', html, re.S)
    for action, body in forms:
        fields = dict(re.findall(r'name="([^"]+)" value="([^"]*)"', body))
        if unescape(fields["answer"]) == answer:
            return {"action": unescape(action), **{k: unescape(v) for k, v in fields.items()}}
    raise AssertionError(f"no alias form for {answer!r}")


def test_one_click_makes_a_validated_version_and_links_to_the_regrade(client, accounts, basic_set, sessions):  # type: ignore[no-untyped-def]
    _wrong_answers_given(client, accounts)
    login(client, accounts["instructor"])
    html = client.get(GRADEBOOK).text
    form = _alias_form(html, "编码部分")
    assert "accepted now" not in html
    with pytest.raises(AssertionError):  # the known-wrong example of the set gets no button
        _alias_form(html, "decoder")

    action = form.pop("action")
    started = client.post(action, data=form, follow_redirects=False)
    assert started.status_code == 303 and re.fullmatch(r"/instructor/uploads/[\w-]+", started.headers["location"])
    report = _finish(client, started.headers["location"])
    assert "Stored <strong>basic</strong> as version 2." in report
    link = re.search(r'<a href="([^"]+)">preview the regrade of t1</a>', report)
    assert link, report
    assert _versions(sessions) == [1, 2]

    # The new version's problemset.yaml says it, and keeps the fixture's comment; the alias is graded right.
    with sessions() as session:
        version = session.scalars(select(ProblemSetVersion).where(ProblemSetVersion.number == 2)).one()
        assert version.created_by_id == accounts["instructor"].id
        loaded = sets.loaded_version(client.app.state.settings, version)
    spec_text = loaded.text("problemset.yaml")
    assert spec_text.startswith("# A tiny set for the service's own tests")
    assert 'answers: [encoder, 编码器, "编码部分"]' in spec_text
    assert 'accept: [Encoder, 编码器。, "编码部分"]' in spec_text

    # The folder it came from is version 1: loading it again (serve's start-up) keeps version 2 current.
    with sessions() as session:
        kept, _, created = course_sets.load_dir(session, root=FIXTURE_SETS / "basic", grader=None, keep_newer=True)
        assert (kept.number, created) == (2, False)
        session.commit()
    assert _versions(sessions) == [1, 2]
    # The instructor downloads version 2 to bring the alias into their folder; a TA may not (checks are in it).
    archive = client.get("/api/v1/problem-sets/basic/versions/2/archive", headers=accounts["instructor"].headers)
    assert archive.status_code == 200 and archive.headers["content-type"] == "application/gzip"
    assert 'filename="basic-v2.tar.gz"' in archive.headers["content-disposition"]
    with tarfile.open(fileobj=io.BytesIO(archive.content), mode="r:gz") as tf:
        member = tf.extractfile("problemset.yaml")
        assert member is not None and member.read().decode() == spec_text
    missing = client.get("/api/v1/problem-sets/basic/versions/3/archive", headers=accounts["instructor"].headers)
    assert missing.status_code == 404
    student = client.get("/api/v1/problem-sets/basic/versions/2/archive", headers=accounts["alice"].headers)
    assert student.status_code in (403, 404) and b"encoder" not in student.content

    # The gradebook now says the answer is accepted and links to the regrade; the preview counts both students.
    html = client.get(GRADEBOOK).text
    assert "accepted now" in html
    preview = client.get(unescape(link.group(1)))
    assert preview.status_code == 200
    text = re.sub(r"<[^>]+>", "", preview.text)
    assert "3 submissions of t1 would be regraded" in text  # the three below full marks
    assert "2 would go up, 0 down, 1 stay the same; total change +2 points" in text  # decoder stays wrong


def test_refusals_store_nothing(client, accounts, basic_set, sessions):  # type: ignore[no-untyped-def]
    _wrong_answers_given(client, accounts)
    token = login(client, accounts["instructor"])
    url = "/instructor/sets/basic/aliases"
    cases = [
        ({"problem": "t1", "part": "b1", "answer": "decoder"}, 409, "listed under reject"),
        ({"problem": "t1", "part": "b1", "answer": "Encoder"}, 409, "already accepted"),
        ({"problem": "t1", "part": "b2", "answer": "33"}, 422, "only text blanks take aliases"),
        ({"problem": "t2", "part": "b1", "answer": "A"}, 422, "only fill-in blanks take aliases"),
        ({"problem": "t1", "part": "b9", "answer": "x"}, 422, "has no blank"),
        ({"problem": "nope", "part": "b1", "answer": "x"}, 422, "no problem"),
        ({"problem": "t1", "part": "b1", "answer": "a\nb"}, 422, "one line"),
        ({"problem": "t1", "part": "b1", "answer": "x" * 201}, 422, "one line of 1 to 200"),
    ]
    for fields, status, message in cases:
        resp = client.post(url, data={**fields, "csrf_token": token}, follow_redirects=False)
        assert resp.status_code == status, (fields, resp.text[:300])
        assert message in unescape(resp.text), (fields, message)
        assert 'id="alias-error"' in resp.text  # shown on the gradebook page it came from
    # Without the form's CSRF token (a cross-site post) nothing happens either.
    resp = client.post(url, data={"problem": "t1", "part": "b1", "answer": "编码部分"}, follow_redirects=False)
    assert resp.status_code == 403
    assert _versions(sessions) == [1]


def test_a_pinned_assignment_is_refused(client, accounts, basic_set, sessions):  # type: ignore[no-untyped-def]
    with sessions() as session:
        version = session.scalars(select(ProblemSetVersion)).one()
        for assignment in session.scalars(select(Assignment)):
            assignment.pinned_version_id = version.id
        session.commit()
    token = login(client, accounts["instructor"])
    resp = client.post("/instructor/sets/basic/aliases",
                       data={"problem": "t1", "part": "b1", "answer": "编码部分", "csrf_token": token})  # fmt: skip
    assert resp.status_code == 409 and "pinned to version 1 of the set" in unescape(resp.text)
    assert _versions(sessions) == [1]


def test_only_staff_who_may_upload_get_the_button_or_the_route(client, world, sessions):  # type: ignore[no-untyped-def]  # noqa: F811
    body = {"problem_set": "basic", "problem": "t1", "answers": {"b1": "编码部分", "b2": "32"}, "offering": world.a}
    client.post("/api/v1/submissions", json=body, headers=world.people["a:alice"].headers, params={"wait": 10})
    page = f"{GRADEBOOK}?offering={world.a}"
    fields = {"problem": "t1", "part": "b1", "answer": "编码部分"}
    for key in ("a:ta", "b:instructor", "a:alice"):
        client.cookies.clear()
        token = login(client, world.people[key])
        html = client.get(page).text
        assert "Accept as right" not in html, key
        resp = client.post(f"/instructor/sets/basic/aliases?offering={world.a}", data={**fields, "csrf_token": token})
        assert resp.status_code in (403, 404), (key, resp.status_code)
        assert "编码部分" not in resp.text, key
    ta_download = client.get("/api/v1/problem-sets/basic/versions/1/archive", params={"offering": world.a},
                             headers=world.people["a:ta"].headers)  # fmt: skip
    assert ta_download.status_code in (403, 404) and b"encoder" not in ta_download.content
    client.cookies.clear()
    login(client, world.people["a:instructor"])
    assert "Accept as right" in client.get(page).text
    assert _versions(sessions) == [1]


def test_an_edit_of_an_older_version_is_refused(client, accounts, basic_set, sessions, tmp_path):  # type: ignore[no-untyped-def]
    """Two instructors add aliases from the same page: the second edit was made from version 1, and storing it
    over version 2 would drop the first alias, so it is refused (the button's route checks the same)."""
    folder = shutil.copytree(FIXTURE_SETS / "basic", tmp_path / "basic")
    spec_file = folder / "problemset.yaml"
    spec_file.write_text(edited_spec(spec_file.read_text(encoding="utf-8"), 0, 0, "编码部分"), encoding="utf-8")
    first = load_problem_set(folder)
    with sessions() as session:
        version = session.scalars(select(ProblemSetVersion)).one()
        sets.ingest(session, loaded=first, user_id=None, grader=None, based_on=version.number)
        session.commit()
        with pytest.raises(Conflict, match="has a newer version than 1"):
            sets.ingest(session, loaded=first, user_id=None, grader=None, based_on=version.number)
    assert _versions(sessions) == [1, 2]


def test_the_api_adds_an_alias_too(client, accounts, basic_set, sessions):  # type: ignore[no-untyped-def]
    url, staff = "/api/v1/problem-sets/basic/aliases", accounts["instructor"].headers
    body = {"problem": "t1", "part": "b1", "answer": "编码部分"}
    assert client.post(url, json=body, headers=accounts["alice"].headers).status_code == 403  # a student's token
    added = client.post(url, json=body, headers=staff)
    assert added.status_code == 201, added.text
    assert added.json()["version"] == 2 and added.json()["created"] and added.json()["report"]["ok"]
    again = client.post(url, json=body, headers=staff)
    assert again.status_code == 409 and "already accepted" in again.text
    known_wrong = client.post(url, json={**body, "answer": "decoder"}, headers=staff)
    assert known_wrong.status_code == 409 and "listed under reject" in known_wrong.text
    assert client.post(url, json={**body, "extra": 1}, headers=staff).status_code == 422
    assert client.post(url, json={**body, "answer": "x" * 201}, headers=staff).status_code == 422
    assert client.post("/api/v1/problem-sets/nope/aliases", json=body, headers=staff).status_code == 404
    assert _versions(sessions) == [1, 2]
    # Submissions graded before keep their score until regraded; a new one is graded against version 2.
    assert submit(client, accounts["bob"], "t1", {"b1": "编码部分", "b2": "32"})["score"] == 3


def test_a_lists_own_comment_stays_and_the_lines_after_it_follow_the_new_alias() -> None:
    text = "problems:\n  - id: q\n    parts:\n      - kind: text\n        answers:\n          - a   # one\n" \
        "          - b   # two\n        # about the regex\n        regex: x\n"  # fmt: skip
    lines = edited_spec(text, 0, 0, "NEW").splitlines()
    assert lines[5:9] == [
        "          - a   # one",
        "          - b   # two",
        '          - "NEW"',
        "        # about the regex",
    ]


@pytest.mark.parametrize(
    "text",
    [
        # an anchored list used by a second blank
        "problems:\n  - id: q\n    parts:\n      - kind: text\n        answers: &same [a]\n"
        "      - kind: text\n        answers: *same\n",
        # a part built from a merge key: the shared mapping holds the list
        "base: &base {kind: text, answers: [a]}\nproblems:\n  - id: q\n    parts:\n      - <<: *base\n"
        "      - <<: *base\n",
    ],
    ids=["anchor", "merge-key"],
)
def test_a_list_shared_with_other_blanks_is_refused(text: str) -> None:
    with pytest.raises(Invalid, match="shared with other parts through a YAML anchor"):
        edited_spec(text, 0, 0, "NEW")


def test_a_file_the_round_trip_parser_cannot_read_is_refused_not_a_500(client, accounts, sessions, tmp_path):  # type: ignore[no-untyped-def]
    folder = shutil.copytree(FIXTURE_SETS / "basic", tmp_path / "basic")
    spec = folder / "problemset.yaml"
    # PyYAML (the loader) takes the last of a key given twice; the round-trip parser refuses the file.
    spec.write_text(spec.read_text(encoding="utf-8").replace('version: "1"', 'version: "1"\nversion: "2"'))
    with sessions() as session:
        course_sets.load_dir(session, root=folder, grader=None)
        session.commit()
    token = login(client, accounts["instructor"])
    resp = client.post("/instructor/sets/basic/aliases",
                       data={"problem": "t1", "part": "b1", "answer": "编码部分", "csrf_token": token})  # fmt: skip
    assert resp.status_code == 422 and "cannot be edited here" in unescape(resp.text)
    api = client.post("/api/v1/problem-sets/basic/aliases", headers=accounts["instructor"].headers,
                      json={"problem": "t1", "part": "b1", "answer": "编码部分"})  # fmt: skip
    assert api.status_code == 422 and "add the alias to the file by hand" in api.text
    assert _versions(sessions) == [1]


def test_two_quick_clicks_never_lose_an_alias(client, accounts, basic_set, sessions):  # type: ignore[no-untyped-def]
    """Two answers accepted one right after the other: either the second click was made from the version the first
    stored (both aliases in version 3), or both were made from version 1 and the second is refused with a reason;
    never a version 3 that dropped the first alias."""
    _wrong_answers_given(client, accounts)
    token = login(client, accounts["instructor"])
    pages = []
    for answer in ("编码部分", "编码模块"):
        form = {"problem": "t1", "part": "b1", "answer": answer, "csrf_token": token}
        pages.append(client.post("/instructor/sets/basic/aliases", data=form, follow_redirects=False))
    reports = [unescape(_finish(client, page.headers["location"])) for page in pages]
    with sessions() as session:
        latest = sets.get_latest(session, "basic")
        loaded = sets.loaded_version(client.app.state.settings, latest)
    problem = loaded.spec.problem("t1")
    assert isinstance(problem, FillInProblem) and isinstance(problem.parts[0], TextSpec)
    accepted = [grade_part(answer, problem.parts[0]).correct for answer in ("编码部分", "编码模块")]
    if _versions(sessions) == [1, 2, 3]:
        assert accepted == [True, True], reports
    else:
        assert _versions(sessions) == [1, 2] and accepted.count(True) == 1
        # Refused before the gate, after it, or (both stored at the same instant) by the unique version number.
        reasons = r"has a newer version than 1|got version 2 while this edit of version 1|stored at the same moment"
        assert any(re.search(reasons, r) for r in reports), reports


def test_a_folder_change_after_a_web_alias_is_logged_and_load_stores_the_folder(
    client, accounts, basic_set, sessions, tmp_path, caplog
):  # type: ignore[no-untyped-def]
    added = client.post("/api/v1/problem-sets/basic/aliases", headers=accounts["instructor"].headers,
                        json={"problem": "t1", "part": "b1", "answer": "编码部分"})  # fmt: skip
    assert added.status_code == 201
    with sessions() as session:
        # `autograder problems load` of the unchanged folder stores it as asked (serve's start-up would keep v2).
        version, _, created = course_sets.load_dir(session, root=FIXTURE_SETS / "basic", grader=None)
        assert (version.number, created) == (3, True)
        session.commit()
    assert "replaces version 2, which was made on the web" in caplog.text
    assert _versions(sessions) == [1, 2, 3]


def test_the_language_switcher_on_a_refusal_returns_to_the_gradebook(client, accounts, basic_set):  # type: ignore[no-untyped-def]
    """A refusal is shown at the form's POST-only address: the switcher must lead back to the page it came from,
    not to an address that answers 405."""
    token = login(client, accounts["instructor"])
    gradebook = "http://testserver/instructor/sets/basic/gradebook?offering=1"
    resp = client.post("/instructor/sets/basic/aliases", headers={"Referer": gradebook},
                       data={"problem": "t1", "part": "b1", "answer": "decoder", "csrf_token": token})  # fmt: skip
    assert resp.status_code == 409
    assert 'name="next" value="/instructor/sets/basic/gradebook?offering=1"' in resp.text
    form = {"problem": "t1", "part": "b1", "answer": "decoder", "csrf_token": token}
    other_site = client.post("/instructor/sets/basic/aliases", headers={"Referer": "https://evil.example/x"}, data=form)
    assert 'name="next" value="/"' in other_site.text
