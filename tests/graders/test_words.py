"""Feedback words (graders.words): what a template may hold, how a page renders them, what a stranger may send."""

from __future__ import annotations

from typing import Any

import pytest

from graders.code.checker import protocol
from graders.code.checks import CheckFailed
from graders.words import MAX_NODES, BadWords, Said, Words, of_text, parse_words, said, text_said

AXIS = said("attention.softmax_axis.columns", "Normalise over the keys: columns sum to 1 instead of rows.")
COUNT = said("tally.count", "%(prop)s: %(failed)g of %(total)g cases failed.", prop=text_said("softmax"), failed=2,
             total=2)  # fmt: skip


@pytest.mark.parametrize(
    ("template", "params"),
    [
        ("%(a)s", {}),  # a placeholder without its value
        ("plain", {"secret": "hidden input"}),  # a value the text would not show: a channel of its own
        ("%(a)999999s", {"a": "x"}),  # a width: a page would format a megabyte of spaces
        ("%s", {}),  # positional
        ("100 % sure", {}),  # a lone % sign
        ("%(n)g", {"n": "1.5"}),  # a number conversion given a string
        ("%(n)d", {"n": float("nan")}),
        ("%(a)s", {"a": "x" * 501}),
        ("%(a)s", {"a": ["a", "list"]}),
    ],
)
def test_a_template_and_its_values_must_agree(template: str, params: dict[str, Any]) -> None:
    with pytest.raises(BadWords):
        Said("some.code", template, params)


def test_a_code_is_dotted_lower_case_words() -> None:
    with pytest.raises(BadWords):
        Said("Has Spaces", "x")
    assert Said("attention.basic.needs_basic", "x").code == "attention.basic.needs_basic"


def test_rendering_translates_every_template_and_keeps_the_values() -> None:
    zh = {"%(prop)s: %(failed)g of %(total)g cases failed.": "%(prop)s：%(total)g 个用例中有 %(failed)g 个未通过。"}
    assert COUNT.english() == "softmax: 2 of 2 cases failed."
    assert COUNT.render(lambda t: zh.get(t, t)) == "softmax：2 个用例中有 2 个未通过。"
    # A translation that does not fit its values (a catalog's mistake) reads as the English.
    assert COUNT.render(lambda t: "%(other)s") == "softmax: 2 of 2 cases failed."
    # Plain text is shown as written: its template is no catalog entry.
    assert text_said("50% of it").render(lambda t: "translated") == "translated"  # the only template is %(text)s
    assert text_said("50% of it").english() == "50% of it"


def test_words_round_trip_and_a_stranger_gets_nothing_odd_through() -> None:
    words = Words(AXIS, (COUNT,), needs="softmax_axis")
    assert parse_words(words.to_wire()) == words
    wire = words.to_wire()
    for bad in (
        {**wire, "extra": 1},
        {**wire, "details": "not a list"},
        {**wire, "needs": 3},
        {**wire, "headline": {**wire["headline"], "template": "%(x)s"}},  # a placeholder without its value
        {**wire, "headline": {**wire["headline"], "params": {"x": {"nested": "object"}}}},
        {"headline": {"code": "a", "template": "%(a)s", "params": {"a": True}}},  # a bool is no number here
        "a string",
    ):
        assert parse_words(bad) is None, bad


def test_too_many_sentences_are_cut_with_an_ellipsis() -> None:
    fitted = Words.fitted(AXIS, [COUNT] * 100)
    assert fitted.details[-1].english() == "…"
    assert fitted.headline.nodes() + sum(d.nodes() for d in fitted.details) <= MAX_NODES
    assert parse_words(fitted.to_wire()) == fitted


def test_plain_text_becomes_a_headline_and_one_detail_a_line() -> None:
    words = of_text("first line\nsecond 0.123\nthird")
    assert [words.headline.english(), *(d.english() for d in words.details)] == ["first line", "second 0.123", "third"]
    assert words.english() == "first line\nsecond 0.123\nthird"


def test_check_failed_keeps_the_english_text_and_the_words() -> None:
    failed = CheckFailed(Words(AXIS, (COUNT,)), score_fraction=0.5)
    assert failed.feedback == f"{AXIS.english()}\nsoftmax: 2 of 2 cases failed."
    assert failed.words == Words(AXIS, (COUNT,))
    assert CheckFailed("plain").words is None


def test_the_service_keeps_a_checkers_words_only_when_they_say_what_its_text_says() -> None:
    words = Words(AXIS, (COUNT,))
    sent = {"kind": "failed", **protocol.feedback_fields(words)}
    assert protocol.parse_feedback(sent) == words
    # Words that would show more (or other) than the stored text are dropped: the text alone is kept.
    forged = {**sent, "feedback": "something else"}
    assert protocol.parse_feedback(forged) == "something else"
    assert protocol.parse_feedback({"feedback": "text", "words": {"headline": "nonsense"}}) == "text"
    assert protocol.feedback_fields(None) == {"feedback": ""}


def test_a_number_is_kept_as_the_text_shows_it_so_the_words_carry_no_more_digits() -> None:
    # A hidden check that passed a raw float (an error computed from a hidden input) under %g would otherwise
    # hand the student all 17 digits in the words while the English text shows 6.
    words = said("x.err", "error %(e)g after %(n)d steps", e=0.12345678912345, n=3.99)
    assert words.english() == "error 0.123457 after 3 steps"
    assert words.to_wire()["params"] == {"e": 0.123457, "n": 3}
    stranger = {"headline": words.to_wire() | {"params": {"e": 0.12345678912345, "n": 3.99}}, "details": []}
    parsed = parse_words(stranger)
    assert parsed is not None and parsed.headline.params == {"e": 0.123457, "n": 3}


@pytest.mark.parametrize("conversion", ["g", "d", "s"])
def test_a_huge_integer_from_a_stranger_is_no_words_not_a_crash(conversion: str) -> None:
    raw = {"headline": {"code": "a", "template": f"%(x){conversion}", "params": {"x": 10**400}}, "details": []}
    assert parse_words(raw) is None
