"""Blanks in the prompt, the parse preview, kept answers and marks, pending hand grading, no-store, HTML 413."""

from __future__ import annotations

import re

import pytest
from markupsafe import Markup

from app.submissions.schemas import CheckPublic
from app.web.feedback import round_numbers, split_feedback, summarize
from app.web.markdown import render_prompt
from graders.answers.preview import preview_matrix, preview_shape, preview_size, preview_symbolic
from graders.answers.registry import ANSWER_KINDS, grade_part
from graders.answers.specs import MatrixSpec, ShapeSpec, SizeSpec, SymbolicSpec
from graders.problemset.loader import load_problem_set
from tests.conftest import REPO
from tests.web.conftest import wait_graded

# One app per module and backend (tests/conftest.py): each test starts from emptied rows and no cookie, and
# none changes the app's settings or leaves work running.
pytestmark = pytest.mark.shared_app


def _inputs(ids: list[str]) -> dict[str, Markup]:
    return {b: Markup(f'<input id="{b}">') for b in ids}


def test_markers_become_inputs_in_text_math_and_code() -> None:
    source = (
        "$$\\frac{QK^\\top}{\\text{(b1)}}$$\n\nquery 想要（b2）______。\n\n"
        "```python\nx = （b3）______.load()\n```\n\n不在题面的 b4"
    )
    html, placed = render_prompt(source, _inputs(["b1", "b2", "b3", "b4"]))
    assert placed == ["b1", "b2", "b3"]  # b4 has no marker: it goes below the prompt
    assert '<span class="formula-blanks"><input id="b1"></span>' in html  # after the formula KaTeX draws
    assert '想要<input id="b2">。' in html
    assert '<pre class="with-blanks"><code class="language-python">x = <input id="b3">.load()' in html
    assert "<p><pre" not in html


def test_prompt_text_stays_escaped_around_blanks() -> None:
    html, _ = render_prompt("<script>alert(1)</script> （b1）______ $a<b$", _inputs(["b1"]))
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "$a&lt;b$" in html


@pytest.mark.parametrize("folder", ["ch9", "attention"])
def test_shipped_hints_are_neutral_formats(folder: str) -> None:
    """Each hint's example parses as its kind (no refused form) and is no blank's answer (no give-away)."""
    loaded = load_problem_set(REPO / "problems" / folder)
    for problem in loaded.spec.problems:
        for spec in getattr(problem, "parts", []):
            kind = ANSWER_KINDS[spec.kind]
            hint = kind.hint_for(spec)
            if "e.g." not in hint:
                continue
            for example in re.split(r" or ", hint.split("e.g.", 1)[1]):
                result = grade_part(example.strip(), spec)
                where = f"{folder} {problem.id} {spec.kind} hint {example!r}"
                assert not result.correct, f"{where} is the answer"
                assert "such as" not in result.feedback and "not a" not in result.feedback, f"{where}: {result}"


def test_previews_parse_with_the_graders_readers() -> None:
    sym = SymbolicSpec(kind="symbolic", answer="sqrt(d_k)", symbols=["d_k"])
    assert preview_symbolic("\\sqrt{d_k}", sym).latex == "\\sqrt{d_{k}}"
    assert preview_symbolic("d_k +", sym).error == "not a valid expression"
    assert preview_symbolic("__import__('os')", sym).error  # names outside the symbols are refused, never run
    assert preview_matrix("1 2; 3 4", MatrixSpec(kind="matrix", answer=[[1]])).latex == (
        "\\begin{bmatrix}1 & 2 \\\\ 3 & 4\\end{bmatrix}"
    )
    assert preview_shape("(B, T, d)", ShapeSpec(kind="shape", answer=[1])).error.startswith("not a shape")
    size = SizeSpec(kind="size", answer_bytes=1)
    assert preview_size("1.5 KiB", size).latex == "1.5\\,\\text{KiB}"
    assert "unknown unit" in preview_size("4 parsecs", size).error


def test_preview_endpoint_needs_login_and_never_says_right_or_wrong(as_alice) -> None:  # type: ignore[no-untyped-def]
    client, _ = as_alice
    ok = client.get("/sets/basic/problems/t1/preview", params={"part": "b2", "text": "2^5"})
    assert ok.status_code == 200 and ok.json() == {"ok": True, "latex": "32", "error": ""}
    wrong = client.get("/sets/basic/problems/t1/preview", params={"part": "b2", "text": "31"}).json()
    assert wrong == {"ok": True, "latex": "31", "error": ""}  # the same shape of answer: parsed, not judged
    bad = client.get("/sets/basic/problems/t1/preview", params={"part": "b2", "text": "3 +"}).json()
    assert bad["ok"] is False and bad["error"]
    assert client.get("/sets/basic/problems/t1/preview", params={"part": "b1", "text": "x"}).status_code == 404
    client.cookies.clear()
    anon = client.get("/sets/basic/problems/t1/preview", params={"part": "b2", "text": "1"}, follow_redirects=False)
    assert anon.status_code == 303 and anon.headers["location"].startswith("/login")


def test_last_answers_are_filled_in_and_marked(as_alice) -> None:  # type: ignore[no-untyped-def]
    client, token = as_alice
    resp = client.post("/sets/basic/problems/t1", data={"answer.b1": "编码器", "answer.b2": "31", "csrf_token": token},
                       follow_redirects=False)  # fmt: skip
    wait_graded(client, int(resp.headers["location"].rsplit("/", 1)[1]))
    page = client.get("/sets/basic")
    assert page.headers["cache-control"] == "no-store"
    html = page.text
    assert re.search(r'<span class="blank right" data-part="b1">.*?value="编码器"', html)
    assert re.search(r'<span class="blank wrong" data-part="b2">.*?value="31"', html)


def test_an_essay_awaiting_hand_grading_is_pending_not_zero(as_alice) -> None:  # type: ignore[no-untyped-def]
    client, token = as_alice
    resp = client.post("/sets/basic/problems/t3", data={"answer.b1": "same data", "csrf_token": token},
                       follow_redirects=False)  # fmt: skip
    html = wait_graded(client, int(resp.headers["location"].rsplit("/", 1)[1]))
    assert 'class="score pending-score">pending' in html
    history = client.get("/history").text
    assert "pending (hand grading)" in history and "0 / 3" not in history
    assert "awaiting hand grading" in client.get("/sets/basic").text
    assert "1 awaiting hand grading" in client.get("/").text


def test_pages_get_an_html_413_and_the_api_keeps_json(as_alice) -> None:  # type: ignore[no-untyped-def]
    client, token = as_alice
    big = "x" * (1 << 20)
    page = client.post("/sets/basic/problems/t3", data={"answer.b1": big, "csrf_token": token})
    assert page.status_code == 413, page.text[-600:]
    assert page.headers["content-type"].startswith("text/html")
    assert "That was too large" in page.text and "1,048,576 bytes" in page.text
    api = client.post(
        "/api/v1/submissions", content=(big + "xx").encode(), headers={"content-type": "application/json"}
    )
    assert api.status_code == 413 and api.headers["content-type"] == "application/json"


def _check(name: str, passed: bool, feedback: str) -> CheckPublic:
    return CheckPublic(name=name, category="correctness", passed=passed, score=1.0 if passed else 0.0, max_score=1.0,
                       feedback=feedback, visibility="visible", duration_ms=1.0)  # fmt: skip


def test_code_feedback_leads_with_one_headline() -> None:
    syntax = "SyntaxError: expected ':' (line 1)"
    same = summarize([_check("a", False, syntax), _check("b", False, syntax), _check("c", True, "ok")])
    assert same.headline == syntax and same.headline_check == "all 2 failing checks"
    assert [line.sentence for line in same.lines] == ["same as above", "same as above", "ok"]
    axis = summarize([_check("rows", True, "ok"), _check("sum", False, "weights do not sum to 1 over keys.\nmax abs "
                      "error 0.123456789 at index (0, 1)")])  # fmt: skip
    assert axis.headline == "weights do not sum to 1 over keys." and axis.headline_check == "sum"
    assert axis.lines[1].detail == "max abs error 0.123 at index (0, 1)"


def test_numbers_in_detail_are_rounded_to_3_significant_digits() -> None:
    assert round_numbers("err 0.0012345678, tol 1.0000001e-05, n 128, v 3.5") == "err 0.00123, tol 1e-05, n 128, v 3.5"
    assert split_feedback("one line only").detail == ""


def test_a_repeated_cause_points_back_and_long_sentences_fold_their_numbers() -> None:
    basic = (
        "these points need correct results on a basic case first: scaled_attention(q (1, 2, 3, 4)): max abs 0.1234567"
    )
    out = summarize([_check("axis", False, "softmax over the key axis"), _check("empty", False, basic),
                     _check("method", False, basic)])  # fmt: skip
    assert out.lines[1] == split_feedback(basic)
    assert out.lines[1].sentence == "these points need correct results on a basic case first"
    assert out.lines[1].detail == "scaled_attention(q (1, 2, 3, 4)): max abs 0.123"
    assert out.lines[2].sentence == "same cause as empty"


def test_live_fragment_waits_for_the_grade_and_needs_a_login(as_alice) -> None:  # type: ignore[no-untyped-def]
    client, token = as_alice
    resp = client.post("/sets/basic/problems/t1", data={"answer.b1": "encoder", "csrf_token": token},
                       follow_redirects=False)  # fmt: skip
    sub_id = int(resp.headers["location"].rsplit("/", 1)[1])
    live = client.get(f"/submissions/{sub_id}/live", params={"wait": 20})
    assert live.status_code == 200 and live.headers["x-submission-status"] == "graded"
    assert 'class="score-line"' in live.text and "<html" not in live.text  # the fragment, not a whole page
    assert 'data-live=""' in client.get(f"/submissions/{sub_id}").text  # a graded page follows nothing
    client.cookies.clear()
    anon = client.get(f"/submissions/{sub_id}/live", follow_redirects=False)
    assert anon.status_code == 303 and "x-submission-status" not in anon.headers
