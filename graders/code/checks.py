"""The check framework: instructors write ``@check`` functions in a problem set's ``checks/*.py``.

A check receives a ``StudentProxy`` and calls the student's function through it; every comparison happens here, on
the trusted side. A check passes by returning (optionally a feedback string), fails by raising ``CheckFailed`` (or
AssertionError), and may give partial credit with ``CheckFailed(..., score_fraction=0.5)``.

A set's checks and the check libraries (checklibs/) import these names from ``graders.code.check_api``, the one
module of the engine they may use (docs/check-authoring.md). Example::

    from graders.code.check_api import CheckFailed, check

    @check(points=2, category="softmax_axis", visibility="hidden")
    def softmax_over_keys(student):
        out, weights = student.call("scaled_attention", q, k, v)
        if not torch.allclose(weights.sum(-1), torch.ones(...)):
            raise CheckFailed("rows of the weights do not sum to 1: softmax must run over the key axis")
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

from graders.results import CATEGORIES, Visibility
from graders.words import Said, Words, as_text, as_words


class CheckFailed(Exception):
    """Raised by a check: the student's code does not have the property checked.

    Args:
        feedback: student-safe text naming the property and the evidence, or the same as ``Words`` (a headline
            saying what to fix, the details, the check it waits on) or one ``Said``, which the pages word in the
            viewer's language (docs/check-authoring.md, "Feedback in the viewer's language").
        score_fraction: partial credit in [0, 1).

    ``feedback`` is always the English text; ``words`` the structured form, or None for plain text.
    """

    def __init__(self, feedback: str | Said | Words, *, score_fraction: float = 0.0) -> None:
        text = as_text(feedback)
        super().__init__(text)
        self.feedback = text
        self.words = as_words(feedback)
        self.score_fraction = min(max(score_fraction, 0.0), 1.0)


class CheckUsageError(Exception):
    """The check asked for something impossible (an instructor's mistake, not the student's).

    Raised by the proxy before a bad request reaches the student's child, and by a check that cannot go on (say,
    one that reads the source where the proxy has none): the check's result then blames the check, not the code.
    """


class StudentError(Exception):
    """The student's function raised; only its type name and (truncated) message cross the sandbox boundary."""

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(f"{type_name}: {message}")
        self.type_name = type_name
        self.message = message


class GraderWordedError(StudentError):
    """The student's code is at fault, but the words are the grader's (a limit it ran into): safe to show even in
    a hidden check, where a student's own exception text never is."""


@dataclass(frozen=True)
class Ref:
    """A name defined inside the jail by ``StudentProxy.define``; passed as an argument, it resolves there.

    Used when the student's function must receive code rather than data (q7: a student's test receives layers).
    """

    name: str


@dataclass(frozen=True, eq=False)
class TrustedFunction:
    """A function of the check's, handed to the student's code without ever leaving the trusted side.

    Passed as an argument of ``StudentProxy.call`` (or ``call_with_grad``), it reaches the student as an opaque
    callable: one type and repr for every function, only a random handle fresh per call. Each call the student's
    code makes comes back over the pipe, ``fn`` runs here on the decoded arguments, and its result (tensors,
    numbers, ... within ``codec.CALLBACK_CAPS``) goes back. Used where the student's code must receive code whose
    inner workings must stay hidden (q7: a student's test receives layers it must classify by calling them).

    ``fn`` refuses bad arguments by raising ``ArgumentRejected``, whose message the student sees; any other
    exception reaches the student as one fixed message, the same for every function. The calls count toward the
    student's call (its time limit; at most ``proxy.MAX_CALLBACKS`` per call) and ``fn`` may not call the student.
    """

    fn: Callable[..., Any]


class ArgumentRejected(Exception):
    """Raised by a TrustedFunction's ``fn``: the student's code receives ``TypeError`` or ``ValueError(message)``.

    The message must depend on the arguments only, never on which function refused them.
    """

    def __init__(self, message: str, *, type_name: str = "ValueError") -> None:
        super().__init__(message)
        self.message = message
        self.type_name = type_name if type_name in ("TypeError", "ValueError") else "ValueError"


@dataclass(frozen=True)
class Timing:
    """Wall-clock timings measured on the trusted side, in seconds."""

    times_s: list[float]

    @property
    def median_s(self) -> float:
        ordered = sorted(self.times_s)
        mid = len(ordered) // 2
        return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


@dataclass(frozen=True)
class TimedCall:
    """One timed round trip of the student's function in a ``TimingSession``.

    ``seconds`` is the call's work as the trusted side measured it: the CPU time the student's processes used during
    the round trip on a CPU worker (what load beside it or a sleep in it does not move), the wall time on a GPU
    worker (the child waits for its kernels); ``wall_seconds`` is the round trip's wall time, for reports only.
    ``result()`` decodes the value the function returned (raises like ``StudentProxy.call`` would for a value that
    may not cross). Decoding is left until asked for, so a check can run a whole series before it looks at any
    result: every call then looks the same from inside the jail, whichever results are compared and whatever
    comparing them costs.
    """

    seconds: float
    result: Callable[[], Any]
    wall_seconds: float | None = None


class TimingSession(Protocol):
    """Paired timing: the student's function and an instructor reference, timed alternately in one check.

    The reference runs in its own clean jailed child, spawned once for the session, that never loads student code;
    every process of the student is stopped while the reference runs and resumed for its own calls. Arguments are
    sent exactly as given (no noise is added, so that every result can be checked against its inputs): the check
    must give every run inputs of its own.
    """

    def student(self, name: str, args: list[Any], kwargs: dict[str, Any] | None = None) -> TimedCall:
        """One timed call of the student's ``name``; raises StudentError if it raised."""
        ...

    def reference(self, args: list[Any], kwargs: dict[str, Any] | None = None) -> float:
        """One timed call of the session's reference function, its work in seconds as ``TimedCall.seconds``."""
        ...


class StudentProxy(Protocol):
    """What a check may do with the student's code. Each method is one round trip to the jailed process."""

    device: str  # "cpu" or "cuda": where the student's process runs tensors

    @property
    def source(self) -> str | None:
        """The submission's source text, held on the trusted side (None where the proxy does not know it).

        Read-only data for checks that analyse the code itself (e.g. with ``ast.parse``); never execute it here.
        """
        ...

    def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """Call the student's function ``name``; raises StudentError if it raised.

        Arguments may hold ``TrustedFunction``s: the student's code can call them, they run on this side.
        """
        ...

    def define(self, source: str) -> None:
        """Execute instructor-written helper source inside the jail (not secret: it runs beside student code).

        Names it defines can then be passed to the student's functions as ``Ref(name)``.
        """
        ...

    def call_with_grad(
        self,
        name: str,
        args: list[Any],
        kwargs: dict[str, Any],
        grad_outputs: list[Any],
        wrt: list[int],
    ) -> tuple[Any, list[Any]]:
        """Call ``name``, then backpropagate ``grad_outputs`` (one per tensor output, None to skip) in the child.

        Returns:
            (outputs, grads): grads[i] is the gradient of the positional argument ``wrt[i]``, or None when no
            gradient reached it (detached, cast through numpy, ...).
        """
        ...

    def time(
        self, name: str, args: list[Any], kwargs: dict[str, Any] | None = None, *, warmup: int = 2, repeat: int = 5
    ) -> Timing:
        """Time ``repeat`` calls after ``warmup`` ones, each one round trip measured on the trusted side.

        Every run sends the arguments anew, floating-point tensors with fresh tiny noise, so a submission cannot
        answer timed calls from a cache (CUDA-synchronised inside the jail when on GPU).
        """
        ...

    def time_reference(
        self,
        source: str,
        name: str,
        args: list[Any],
        kwargs: dict[str, Any] | None = None,
        *,
        warmup: int = 2,
        repeat: int = 5,
    ) -> Timing:
        """Time instructor code ``name`` defined by ``source`` exactly as ``time`` times the student, but in a
        fresh jailed child that never loaded student code, while the student's processes are stopped.

        Nothing the student's process does can slow it down or speed it up: use it for the baseline of timing
        checks.
        """
        ...

    def timing_session(self, source: str, name: str) -> AbstractContextManager[TimingSession]:
        """A ``TimingSession`` whose reference is instructor code ``name`` defined by ``source``, loaded once in a
        fresh jailed child that never loaded student code, and kept for the whole session.

        Use it to interleave the student's runs with the reference's (paired measurements under the same load).
        """
        ...


CheckFunc = Callable[[StudentProxy], "str | Said | Words | None"]


@dataclass(frozen=True)
class CheckSpec:
    name: str
    func: CheckFunc
    points: float
    category: str
    visibility: Visibility
    timeout_s: float
    description: str


_ATTR = "__autograder_check__"


def check(
    *,
    points: float,
    category: str,
    visibility: str = "hidden",
    timeout_s: float = 30.0,
    name: str | None = None,
) -> Callable[[CheckFunc], CheckFunc]:
    """Mark a function as a check of its problem.

    Args:
        points: what the check is worth.
        category: one of graders.results.CATEGORIES.
        visibility: "visible" (inputs may be shown), "hidden" or "after_due".
        timeout_s: the check's own time budget.
        name: defaults to the function's name.
    """
    if category not in CATEGORIES:
        raise ValueError(f"unknown check category {category!r}; expected one of {sorted(CATEGORIES)}")
    vis = Visibility(visibility)

    def decorate(func: CheckFunc) -> CheckFunc:
        spec = CheckSpec(
            name=name or func.__name__,
            func=func,
            points=float(points),
            category=category,
            visibility=vis,
            timeout_s=float(timeout_s),
            description=(func.__doc__ or "").strip().split("\n")[0],
        )
        setattr(func, _ATTR, spec)
        return func

    return decorate


def spec_of(func: CheckFunc) -> CheckSpec:
    """The CheckSpec that ``@check`` attached to ``func`` (for wrappers that re-register a check)."""
    spec = getattr(func, _ATTR, None)
    if not isinstance(spec, CheckSpec):
        raise TypeError(f"{func!r} is not a @check function")
    return spec


def collect_checks(module: ModuleType) -> list[CheckSpec]:
    """The checks a module defines, in definition order; a ``CHECKS`` list (from builders) comes first."""
    found: list[CheckSpec] = []
    for obj in list(getattr(module, "CHECKS", [])) + list(vars(module).values()):
        spec = getattr(obj, _ATTR, None)
        if isinstance(spec, CheckSpec) and spec not in found:
            found.append(spec)
    names = [s.name for s in found]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"duplicate check names: {duplicates}")
    return found


def load_checks(path: Path) -> list[CheckSpec]:
    """Import a trusted checks file by path and collect its checks."""
    return collect_checks(load_module(path, "autograder_checks"))


def load_module(path: Path, prefix: str) -> Any:
    """Import an instructor's file by path (in the set's checker only: checks, a problem's generator)."""
    module_name = f"{prefix}_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import checks from {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(module_name, None)
    return module
