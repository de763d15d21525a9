"""Attack: every hidden check of the attention set, fed hostile exceptions, says only "an exception".

A submission chooses its exception's class (its ``__name__``, ``__qualname__``, ``__str__`` and ``__repr__``), its
message and, among the builtins, which one it raises (KeyError or ValueError or ... is about 5.7 bits). Each of
these could carry a hidden input out through the feedback. Every feedback path of every check -- the library's own
catches, the gates, the tallies and the engine's catch of an uncaught StudentError (slot_grading.run_check) -- goes
through ``TrustedText``; this test walks them all with each hostile form and looks for any trace of it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest

from graders.code.checks import CheckSpec, load_checks
from graders.code.proxy import SandboxProxy
from graders.code.sanitise import AN_EXCEPTION, TrustedText
from graders.code.slot_grading import run_check
from graders.results import Visibility
from tests.checklibs.attention.direct_proxy import DirectProxy

SET_ROOT = Path(__file__).resolve().parents[3] / "problems" / "attention"
SECRET = "SECRET1752"
ENTRIES = ("scaled_attention", "attention_loop", "attention_batched", "test_permutation_equivariance")

# Each raises from every entry point. The class forms put the secret in every name and text a class can carry; the
# builtin form picks a rarely raised builtin (naming it would be the leak); the ValueError subclass is named after
# the secret, so a check that accepts ValueError by name refuses it and must say so without the name.
RAISERS = {
    "class": f"""
class Meta(type):
    def __str__(cls): return "{SECRET}"
    def __repr__(cls): return "{SECRET}"
Leak = Meta("{SECRET}", (Exception,), {{"__str__": lambda self: "{SECRET}", "__repr__": lambda self: "{SECRET}"}})
Leak.__qualname__ = "{SECRET}"
def boom(*args, **kwargs):
    raise Leak("{SECRET}")
""",
    "builtin": f"""
def boom(*args, **kwargs):
    raise ZeroDivisionError("{SECRET} q=" + repr([a.tolist() for a in args if hasattr(a, "tolist")])[:200])
""",
    "value_error_subclass": f"""
Leak = type("{SECRET}", (ValueError,), {{}})
def boom(*args, **kwargs):
    raise Leak("{SECRET}")
""",
}
LEAKS = (SECRET, "ZeroDivisionError", "Meta", "Leak")


def hostile_source(kind: str) -> str:
    return RAISERS[kind] + "".join(f"\n{name} = boom\n" for name in ENTRIES)


def hidden_checks() -> list[CheckSpec]:
    specs = [spec for q in ("q5", "q6", "q7") for spec in load_checks(SET_ROOT / "checks" / f"{q}.py")]
    return [spec for spec in specs if spec.visibility is not Visibility.VISIBLE]


HIDDEN = hidden_checks()


@pytest.mark.parametrize("kind", sorted(RAISERS))
@pytest.mark.parametrize("spec", HIDDEN, ids=[spec.name for spec in HIDDEN])
def test_no_hidden_check_names_or_quotes_a_hostile_exception(spec: CheckSpec, kind: str) -> None:
    proxy = DirectProxy(hostile_source(kind))
    outcome = run_check(spec, cast(SandboxProxy, proxy))  # the engine's own path, catches included
    feedback = outcome.result.feedback
    assert not outcome.result.passed
    assert not any(leak in feedback for leak in LEAKS), feedback
    assert "could not evaluate" not in feedback, feedback  # a student verdict, not a check error


def test_the_builder_keeps_type_and_message_for_visible_checks_only() -> None:
    hidden, visible = TrustedText(visible=False), TrustedText(visible=True)
    assert hidden.exception_name("ValueError") == AN_EXCEPTION == hidden.exception_name(SECRET)
    assert hidden.instead_of("KeyError", "ValueError") == hidden.instead_of(SECRET, "ValueError")
    assert hidden.instead_of("KeyError", "ValueError") == "an exception other than ValueError"
    assert visible.instead_of("KeyError", "ValueError") == "KeyError instead of ValueError"
    assert hidden.ended("ran past the check's 5 s limit") == hidden.ended("ran out of memory")
    assert visible.raised("ValueError", "  bad   shape ") == "ValueError: bad shape"


def test_the_walk_covers_every_hidden_check_of_the_set() -> None:
    names: dict[str, Any] = {spec.name: spec for spec in HIDDEN}
    assert {"validation", "empty_row", "gradient", "masking", "loop_vs_batched"} <= set(names)
