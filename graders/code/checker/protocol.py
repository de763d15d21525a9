"""What the service and a checker say to each other: frames (``graders.sandbox.wire``), each side's caps, and the
fixed vocabulary of exceptions that may cross.

Service to checker: ``describe`` (the checks a file defines) and ``run`` (one check); during a run the checker asks
the service for each StudentProxy call (``{"op": "proxy", "m": ...}``) and the service may, within one such call,
ask the checker to run one of the check's TrustedFunctions (``{"op": "callback"}``). A run ends with
``{"done": {...}}``. Values cross as ``graders.sandbox.codec`` trees, never pickled.
"""

from __future__ import annotations

import math
from typing import Any

from graders.code.checks import CheckSpec, GraderWordedError, StudentError
from graders.code.proxy import BadReturnValue, CheckBudgetExceeded, CheckUsageError
from graders.results import CATEGORIES, Visibility
from graders.sandbox.errors import RunEnded
from graders.words import Said, Words, as_text, as_words, parse_words

MAX_CHECKS = 500
NAME_CHARS, TEXT_CHARS, FEEDBACK_CHARS = 200, 500, 4000
MAX_TIMEOUT_S = 3600.0
# Exception kinds a reply or an outcome may name; the receiver rebuilds its own exception from the kind, never
# from a class name the other side chose.
RAISE_KINDS = ("run_ended", "bad_return", "worded", "student", "budget", "usage", "type", "error")


def clip(value: Any, n: int) -> str:
    text = value if type(value) is str else str(value)
    return text if len(text) <= n else text[: n - 1] + "…"


def feedback_fields(feedback: Any) -> dict[str, Any]:
    """A check's feedback for the wire: its English text and, where it has them, its words (graders.words)."""
    if isinstance(feedback, (Said, Words)):
        fields: dict[str, Any] = {"feedback": clip(as_text(feedback), FEEDBACK_CHARS)}
        words = as_words(feedback)
        if words is not None:
            fields["words"] = words.to_wire()
        return fields
    return {"feedback": clip("" if feedback is None else str(feedback), FEEDBACK_CHARS)}


def parse_feedback(done: dict[str, Any]) -> str | Words:
    """The feedback of an outcome, as the checker (instructor code) sent it, checked: its words when they are
    well formed and agree with its text, else the text alone."""
    text = clip(done.get("feedback", ""), FEEDBACK_CHARS)
    words = parse_words(done.get("words"))
    if words is not None and clip(words.english(), FEEDBACK_CHARS) == text:
        return words
    return text


def spec_fields(spec: CheckSpec) -> dict[str, Any]:
    """What the checker says about one check: everything but its function."""
    return {
        "name": spec.name,
        "points": spec.points,
        "category": spec.category,
        "visibility": spec.visibility.value,
        "timeout_s": spec.timeout_s,
        "description": spec.description,
    }


class BadDescription(Exception):
    """The checker described checks that cannot be (a wrong type, an unknown category, too many...)."""


def number(value: Any) -> float | None:
    """A finite int or float (not a bool, not a subclass) as a float; None for anything else."""
    if type(value) not in (int, float) or not math.isfinite(value):
        return None
    return float(value)


def parse_spec(raw: Any) -> dict[str, Any]:
    """One check's description from the checker, validated field by field (the checker runs instructor code)."""
    if type(raw) is not dict:
        raise BadDescription("a check description is not an object")
    name, points, category = raw.get("name"), raw.get("points"), raw.get("category")
    visibility, timeout, description = raw.get("visibility"), raw.get("timeout_s"), raw.get("description", "")
    if type(name) is not str or not 0 < len(name) <= NAME_CHARS:
        raise BadDescription("a check name must be a short non-empty string")
    points_n, timeout_n = number(points), number(timeout)
    if points_n is None or points_n < 0:
        raise BadDescription(f"check {name!r}: points must be a finite non-negative number")
    if timeout_n is None or not 0 < timeout_n <= MAX_TIMEOUT_S:
        raise BadDescription(f"check {name!r}: timeout_s must be in (0, {MAX_TIMEOUT_S:g}]")
    if category not in CATEGORIES:
        raise BadDescription(f"check {name!r}: unknown category")
    if visibility not in {v.value for v in Visibility}:
        raise BadDescription(f"check {name!r}: unknown visibility")
    return {
        "name": name,
        "points": points_n,
        "category": category,
        "visibility": Visibility(visibility),
        "timeout_s": timeout_n,
        "description": clip(description, TEXT_CHARS),
    }


def raise_fields(exc: BaseException) -> dict[str, Any]:
    """An exception as the other side rebuilds it: a kind from RAISE_KINDS and clipped text."""
    if isinstance(exc, RunEnded):
        return {"raise": "run_ended", "cause": exc.cause, "message": clip(exc.message, TEXT_CHARS)}
    if isinstance(exc, BadReturnValue):
        return {"raise": "bad_return", "message": clip(exc.message, TEXT_CHARS)}
    if isinstance(exc, GraderWordedError):
        return {"raise": "worded", "type": clip(exc.type_name, 100), "message": clip(exc.message, TEXT_CHARS)}
    if isinstance(exc, StudentError):
        return {"raise": "student", "type": clip(exc.type_name, 100), "message": clip(exc.message, TEXT_CHARS)}
    if isinstance(exc, CheckBudgetExceeded):
        return {"raise": "budget", "message": clip(exc, TEXT_CHARS)}
    if isinstance(exc, CheckUsageError):
        return {"raise": "usage", "message": clip(exc, TEXT_CHARS)}
    if isinstance(exc, TypeError):
        return {"raise": "type", "message": clip(exc, TEXT_CHARS)}
    return {"raise": "error", "type": clip(type(exc).__name__, 100), "message": clip(exc, TEXT_CHARS)}


def _named_error(type_name: Any) -> type[Exception]:
    """An Exception subclass carrying a (validated) type name, for the service's "check raised X" feedback."""
    name = type_name if type(type_name) is str and type_name.isidentifier() and len(type_name) <= 100 else "Exception"
    return type(name, (Exception,), {})


def rebuild(fields: dict[str, Any]) -> BaseException:
    """The exception ``raise_fields`` described, rebuilt from its kind (an unknown kind is a plain error)."""
    kind = fields.get("raise")
    message = clip(fields.get("message", ""), TEXT_CHARS)
    type_name = clip(fields.get("type", "Exception"), 100)
    if kind == "run_ended":
        cause = fields.get("cause")
        return RunEnded(
            cause if cause in ("timeout", "memory", "output", "exited", "protocol") else "protocol", message
        )
    if kind == "bad_return":
        return BadReturnValue(message)
    if kind == "worded":
        return GraderWordedError(type_name, message)
    if kind == "student":
        return StudentError(type_name, message)
    if kind == "budget":
        return CheckBudgetExceeded(message)
    if kind == "usage":
        return CheckUsageError(message)
    if kind == "type":
        return TypeError(message)
    return _named_error(fields.get("type"))(message)
