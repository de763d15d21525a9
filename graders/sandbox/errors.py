"""Errors of the sandbox layer, kept apart from student outcomes."""

from __future__ import annotations


class SandboxError(Exception):
    """The sandbox itself failed (not the student's code); grading must be retried, never scored 0."""


class WireError(Exception):
    """A frame or value could not be encoded or decoded within the wire protocol's rules and caps."""


class RunEnded(BaseException):
    """The student's process is gone or unusable: later calls of this submission cannot run.

    A BaseException on purpose: a check written as ``try: ... except Exception`` must not swallow it and carry on
    against a dead process.

    Args:
        cause: one of "timeout", "memory", "output", "exited", "protocol".
        message: student-safe text, e.g. "ran past the 10 s limit".
    """

    def __init__(self, cause: str, message: str) -> None:
        super().__init__(message)
        self.cause = cause
        self.message = message
