"""What of a student's exception may be shown in feedback.

Everything the jail reports is data the student controls: a submission could raise ``ValueError(repr(q.tolist()))``,
or an exception class named after a hidden value, to carry hidden inputs out through the feedback. So a hidden or
sealed check shows trusted text only: the exception's type when it is a builtin exception (any other class name
was chosen by the student's code) and no message at all. A visible check, whose inputs the student may see anyway,
shows the message, whitespace normalised and cut.
"""

from __future__ import annotations

import builtins

VISIBLE_MESSAGE_CHARS = 500
TYPE_CHARS = 60
HIDDEN_NOTE = "hidden checks show no exception messages"

_BUILTIN_EXCEPTIONS = frozenset(
    name for name, value in vars(builtins).items() if isinstance(value, type) and issubclass(value, BaseException)
)


def exception_name(type_name: str, *, visible: bool) -> str:
    """The type to name in feedback: as reported for a visible check; for a hidden one only a builtin's name."""
    if visible:
        return type_name[:TYPE_CHARS]
    return type_name if type_name in _BUILTIN_EXCEPTIONS else "an exception of a class of its own"


def sanitise(message: str, *, visible: bool) -> str:
    """The part of a student's exception message that may be shown: all of it (cut) when visible, none when hidden."""
    if not visible:
        return ""
    message = " ".join(message.split())
    return message if len(message) <= VISIBLE_MESSAGE_CHARS else message[: VISIBLE_MESSAGE_CHARS - 1] + "…"


def raised(type_name: str, message: str, *, visible: bool) -> str:
    """``TypeName: message`` for a visible check, ``TypeName (hidden checks show no exception messages)`` else."""
    name = exception_name(type_name, visible=visible)
    if not visible:
        return f"{name} ({HIDDEN_NOTE})"
    text = sanitise(message, visible=True)
    return f"{name}: {text}" if text else name
