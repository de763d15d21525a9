from __future__ import annotations

import pytest

from graders.answers.size import grade_size
from graders.answers.specs import SizeSpec

FOUR_MIB = SizeSpec(kind="size", answer_bytes=4 * 2**20)
FOUR_MB = SizeSpec(kind="size", answer_bytes=4_000_000)


@pytest.mark.parametrize(
    "answer",
    [
        "4 MiB",
        "4MiB",
        "4 MIB",
        "4 miB",
        "4194304",
        "4194304 B",
        "4,194,304 bytes",
        "4194304 字节",
        "4096 KiB",
        "4096KiB",
        "0.00390625 GiB",
        "2^22 B",
        "2**22 bytes",
        "4 * 2^20 B",
        "4×1024×1024 B",
        "４ ＭｉＢ",
        "4 MiB。",
    ],
)
def test_binary_answer_accepts(answer: str) -> None:
    result = grade_size(answer, FOUR_MIB)
    assert result.correct, result.feedback
    assert result.normalized == "4194304 B"


@pytest.mark.parametrize("answer", ["4 MB", "4 mB", "4000 KB", "4000 kB", "4000000", "4,000,000 bytes", "0.004 GB"])
def test_decimal_answer_accepts(answer: str) -> None:
    assert grade_size(answer, FOUR_MB).correct


def test_prefix_mix_up_gets_a_hint() -> None:
    result = grade_size("4 MB", FOUR_MIB)
    assert not result.correct and "MiB = 2^20 B" in result.feedback
    assert result.normalized == "4000000 B"


@pytest.mark.parametrize("answer", ["8 MiB", "4 GiB", "4194305", "2 MiB", "32 Mi B"])
def test_rejects(answer: str) -> None:
    result = grade_size(answer, FOUR_MIB)
    assert not result.correct and "4194304" not in result.feedback


def test_half_kib_is_exactly_512() -> None:
    assert grade_size("0.5 KiB", SizeSpec(kind="size", answer_bytes=512)).correct


def test_fraction_of_a_byte_is_refused() -> None:
    result = grade_size("0.004 GiB", FOUR_MIB)
    assert not result.correct and "whole number" in result.feedback


def test_rtol() -> None:
    spec = SizeSpec(kind="size", answer_bytes=4 * 2**20, rtol=0.05)
    assert grade_size("4.1 MiB", spec.model_copy(update={"answer_bytes": 4_300_000})).correct
    assert grade_size("4 MB", spec).correct  # within 5%


@pytest.mark.parametrize(
    ("answer", "start"),
    [
        ("4 M", "unknown unit"),
        ("4 MiBs", "unknown unit"),
        ("four MiB", "expected a size"),
        ("MiB", "expected a size"),
        ("4..2 MiB", "expected a size"),
        ("-4 MiB", "expected a size"),
        ("9999999^999 B", "that size is far too large"),
    ],
)
def test_garbage(answer: str, start: str) -> None:
    result = grade_size(answer, FOUR_MIB)
    assert not result.correct and result.feedback.startswith(start)


def test_empty() -> None:
    assert grade_size("", FOUR_MIB).feedback == "no answer given"


@pytest.mark.parametrize("answer", ["32 Mib", "32 mib", "33554432 bits", "33554432 b", "32 Mibits"])
def test_bits_are_read_as_bits(answer: str) -> None:
    # 32 mebibits are 4 MiB: b is a bit and B a byte, by case, whatever the case of the prefix.
    result = grade_size(answer, FOUR_MIB)
    assert result.correct, result.feedback
    assert result.normalized == "4194304 B"


@pytest.mark.parametrize("answer", ["4 Mib", "4 mib", "4194304 b", "4194304 bits", "4 mb"])
def test_bits_for_bytes_is_wrong_with_a_hint(answer: str) -> None:
    result = grade_size(answer, FOUR_MIB if "mb" not in answer else FOUR_MB)
    assert not result.correct
    assert "bits versus bytes" in result.feedback and "4194304" not in result.feedback


@pytest.mark.parametrize(
    "answer",
    [
        "4\\,194\\,304 字节",  # the seed's own spelling
        "4\u2009194\u2009304 B",
        "$4\\,\\text{MiB}$",
        "4 MiB = 4194304 B",
        "4 MiB = 4,194,304 bytes = 2^22 B",
        "size = 4 MiB",
    ],
)
def test_latex_spacing_and_equations(answer: str) -> None:
    result = grade_size(answer, FOUR_MIB)
    assert result.correct, result.feedback


def test_an_equation_with_a_wrong_side_is_wrong() -> None:
    result = grade_size("4 MB = 4 MiB", FOUR_MIB)
    assert not result.correct and "not right" in result.feedback
