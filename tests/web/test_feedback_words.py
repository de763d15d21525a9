"""The pages' code feedback from checks' words: the headline says what to fix, a dependent check names the check it
waits on, and both are worded in the viewer's language (the real zh_CN catalog)."""

from __future__ import annotations

from app.submissions.schemas import CheckPublic
from app.web import i18n
from app.web.feedback import summarize
from graders.words import Words, said, text_said

FIX = "Normalise over the keys (the last axis, dim=-1): your weights' columns sum to 1 instead of rows."
FIX_ZH = "请在键的维度上归一化（最后一维，dim=-1）：你的权重按列求和为 1，而不是按行。"
AXIS = said("attention.softmax_axis.columns", FIX)
COUNT = said("tally.count", "%(prop)s: %(failed)g of %(total)g cases failed.",
             prop=said("attention.softmax_axis.property", "softmax over the key axis"), failed=2, total=2)  # fmt: skip
BASIC = said("attention.basic.needs_basic", "these points need correct results on a basic case first: %(problem)s",
             problem=text_said("weights differ: max abs error 0.123456"))  # fmt: skip
NEEDS = Words(said("attention.basic.needs", "needs %(check)s first", check="softmax_axis"), (BASIC,), "softmax_axis")
ZH = i18n.translations("zh_CN")


def _check(name: str, passed: bool | None, feedback: str | Words) -> CheckPublic:
    text = feedback if isinstance(feedback, str) else feedback.english()
    words = None if isinstance(feedback, str) else feedback.to_wire()
    return CheckPublic(name=name, category="softmax_axis", passed=passed, score=1.0 if passed else 0.0, max_score=1.0,
                       feedback=text, visibility="hidden", duration_ms=0.0, words=words)  # fmt: skip


def test_the_headline_is_the_first_failing_checks_sentence_that_says_what_to_fix() -> None:
    checks = [
        _check("reference_example", True, "The 2×2 example matches."),
        _check("softmax_axis", False, Words(AXIS, (COUNT,))),
        _check("empty_row", False, NEEDS),
    ]
    english = summarize(checks)
    assert (english.headline, english.headline_check) == (FIX, "softmax_axis")
    assert english.lines[1].detail == "softmax over the key axis: 2 of 2 cases failed."
    chinese = summarize(checks, ZH)
    assert (chinese.headline, chinese.headline_check) == (FIX_ZH, "softmax_axis")
    assert chinese.lines[1].detail == "在键维度上做 softmax：2 个用例中有 2 个未通过。"


def test_a_check_that_waits_on_a_failing_one_is_never_the_headline() -> None:
    # Listed first, the dependent check still yields the headline to the check it waits on.
    checks = [_check("empty_row", False, NEEDS), _check("softmax_axis", False, Words(AXIS))]
    out = summarize(checks)
    assert (out.headline, out.headline_check) == (FIX, "softmax_axis")


def test_a_dependent_check_names_the_check_it_waits_on_and_keeps_the_numbers_in_its_details() -> None:
    checks = [_check("softmax_axis", False, Words(AXIS)), _check("empty_row", False, NEEDS)]
    assert summarize(checks).lines[1].sentence == "needs softmax_axis first"
    line = summarize(checks, ZH).lines[1]
    assert line.sentence == "需要先通过 softmax_axis"
    assert line.detail == "这些分数需要先在一个基本用例上得到正确结果：weights differ: max abs error 0.123"


def test_under_a_check_that_passed_a_dependent_check_says_that_it_passed() -> None:
    checks = [_check("softmax_axis", True, "softmax over the key axis: all 2 cases passed."),
              _check("empty_row", False, NEEDS)]  # fmt: skip
    out = summarize(checks)
    assert out.lines[1].sentence.startswith("softmax_axis passed, but these points need correct results")
    assert "needs softmax_axis first" not in out.lines[1].sentence
    assert summarize(checks, ZH).lines[1].sentence.startswith("softmax_axis 已通过")
    assert (out.headline, out.headline_check) == (out.lines[1].sentence, "empty_row")  # the only failure: its own


def test_a_dependency_the_viewer_cannot_see_is_worded_without_its_name() -> None:
    sealed = _check("softmax_axis", None, "result shown after the due date")
    assert summarize([sealed, _check("empty_row", False, NEEDS)]).lines[1].sentence == (
        "these points need correct results on a basic case first"
    )
    alone = summarize([_check("empty_row", False, NEEDS)], ZH)
    assert alone.lines[0].sentence == "这些分数需要先在一个基本用例上得到正确结果"


def test_feedback_stored_without_words_reads_as_before() -> None:
    checks = [_check("rows", True, "ok"), _check("sum", False, "weights do not sum to 1 over keys.\nmax abs 0.123456")]
    for tr in (None, ZH):
        out = summarize(checks, tr)
        assert (out.headline, out.headline_check) == ("weights do not sum to 1 over keys.", "sum")
        assert out.lines[1].detail == "max abs 0.123"


def test_words_the_catalog_lacks_read_as_their_english_and_odd_words_as_the_text() -> None:
    course = Words(said("mycourse.hint", "Use a mask of %(n)d keys.", n=3))
    assert summarize([_check("c", False, course)], ZH).headline == "Use a mask of 3 keys."
    odd = _check("c", False, "the stored text")
    odd.words = {"headline": {"code": "x", "template": "%(a)999999999s", "params": {"a": "x"}}}
    assert summarize([odd], ZH).headline == "the stored text"


def test_checks_waiting_on_the_same_check_each_say_so_rather_than_point_at_each_other() -> None:
    checks = [_check("softmax_axis", False, Words(AXIS)), _check("empty_row", False, NEEDS),
              _check("validation", False, NEEDS)]  # fmt: skip
    assert [line.sentence for line in summarize(checks).lines[1:]] == ["needs softmax_axis first"] * 2


def test_format_hints_are_shown_in_the_viewers_language() -> None:
    from app.web.blanks import blank_html
    from graders.answers.registry import ANSWER_KINDS
    from graders.answers.specs import NumericSpec

    part = {"id": "b1", "kind": "numeric", "points": 1, "widget": "text",
            "hint": ANSWER_KINDS["numeric"].hint_for(NumericSpec(kind="numeric", answer=1.0))}  # fmt: skip
    html = blank_html(slug="ch9", problem_id="q1", part=part, given="", mark=None, multi_part=False, tr=ZH)
    assert "数字，例如 0.75 或 3^4" in html and "number, e.g." not in html


def test_needs_reaches_the_api_only_as_the_name_of_another_check_of_the_submission() -> None:
    # ``needs`` is not in the English text: a check could put a hidden input there. Only another check's name
    # of the same submission passes.
    from app.submissions.models import CheckResultRow
    from app.submissions.presenter import _words
    from graders.words import Words, said

    def row(needs: str) -> CheckResultRow:
        words = Words(said("x.y", "Fix the mask."), needs=needs)
        return CheckResultRow(name="masking", feedback=words.english(), words=words.to_wire())

    names = {"softmax_axis", "masking"}
    assert _words(row("softmax_axis"), None, names) == {"headline": said("x.y", "Fix the mask.").to_wire(),
                                                        "details": [], "needs": "softmax_axis"}  # fmt: skip
    for made_up in ("the hidden T is 37", "masking"):
        wire = _words(row(made_up), None, names)
        assert wire is not None and "needs" not in wire
