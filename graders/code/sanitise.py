"""What of a student's exception, or of how its run ended, may be shown in feedback: ``TrustedText`` owns it.

Everything the jail reports is data the student controls: a submission could raise ``ValueError(repr(q.tolist()))``,
an exception class named after a hidden value (its ``__name__``, ``__str__`` and ``__repr__`` are the student's), or
choose *which* builtin exception to raise (KeyError or ValueError or ... carry about 5.7 bits) to carry hidden inputs
out through the feedback. So a hidden or sealed check says only "raised an exception" -- no type, no message -- and
"did not finish" without the cause (time, memory, output or exit). Where a check must judge the type (validation
wants ValueError), the verdict is one bucket: "an exception other than ValueError", one bit. A visible check, whose
inputs the student may see anyway, shows the type and the message, whitespace normalised and cut.

Every check's words about what the student's code raised are built here (``TrustedText``); the module-level
functions are the same builder for one call.
"""

from __future__ import annotations

from dataclasses import dataclass

VISIBLE_MESSAGE_CHARS = 500
TYPE_CHARS = 60
HIDDEN_NOTE = "hidden checks show neither its type nor its message"
AN_EXCEPTION = "an exception"
DID_NOT_FINISH = "your code did not finish this check (hidden checks do not say why)"


@dataclass(frozen=True)
class TrustedText:
    """The one builder of feedback about a student's exception or run end, for one check's visibility."""

    visible: bool

    def exception_name(self, type_name: str) -> str:
        """The type as reported for a visible check; for a hidden one, "an exception" whatever it was."""
        return type_name[:TYPE_CHARS] if self.visible else AN_EXCEPTION

    def message(self, message: str) -> str:
        """The part of the message that may be shown: all of it (cut) when visible, none when hidden."""
        if not self.visible:
            return ""
        message = " ".join(message.split())
        return message if len(message) <= VISIBLE_MESSAGE_CHARS else message[: VISIBLE_MESSAGE_CHARS - 1] + "…"

    def raised(self, type_name: str, message: str) -> str:
        """``TypeName: message`` for a visible check, ``an exception (hidden checks show ...)`` for a hidden one."""
        if not self.visible:
            return f"{AN_EXCEPTION} ({HIDDEN_NOTE})"
        text = self.message(message)
        name = self.exception_name(type_name)
        return f"{name}: {text}" if text else name

    def instead_of(self, type_name: str, expected: str) -> str:
        """Why an exception was the wrong one: ``KeyError instead of ValueError``; hidden: one bucket, one bit."""
        if not self.visible:
            return f"an exception other than {expected}"
        return f"{self.exception_name(type_name)} instead of {expected}"

    def ended(self, grader_words: str) -> str:
        """How the run ended: the grader's words when visible; hidden: "did not finish", without the cause."""
        return grader_words if self.visible else DID_NOT_FINISH


def exception_name(type_name: str, *, visible: bool) -> str:
    """``TrustedText(visible).exception_name``."""
    return TrustedText(visible).exception_name(type_name)


def sanitise(message: str, *, visible: bool) -> str:
    """``TrustedText(visible).message``."""
    return TrustedText(visible).message(message)


def raised(type_name: str, message: str, *, visible: bool) -> str:
    """``TrustedText(visible).raised``."""
    return TrustedText(visible).raised(type_name, message)
