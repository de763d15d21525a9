"""The check-author API: everything of the engine that a set's ``checks/*.py`` and a check library may use.

A check library (``checklibs/<name>/``, such as ``checklibs.attention``) and a set's own checks import the engine
through this module only (import-linter contract ``checklibs-use-the-check-api``); the rest of ``graders`` is the
engine's own and may change without notice. docs/check-authoring.md describes each name with examples.

- Declaring checks: ``check`` (the decorator), ``spec_of`` (for builders that re-register a check), ``CheckSpec``,
  ``CheckFunc``, ``CATEGORIES`` (the categories a check may have) and ``Visibility``.
- Outcomes: return (optionally a feedback string) to pass; raise ``CheckFailed`` (with ``score_fraction`` for
  partial credit) to fail; ``CheckUsageError`` when the check itself cannot go on (the instructor's mistake, never
  the student's: the grade says so instead of blaming the submission).
- Calling the student: ``StudentProxy`` (``call``, ``call_with_grad``, ``define``, ``source``, ``device``), the
  errors a call raises (``StudentError``, ``GraderWordedError``), ``Ref`` (a name ``define`` made in the jail) and
  ``TrustedFunction`` / ``ArgumentRejected`` (a function of the check's the student's code may call).
- Timing: ``StudentProxy.time``, ``time_reference`` and ``timing_session``, which return ``Timing``, ``TimedCall``
  and ``TimingSession``.
- Trusted feedback: ``TrustedText`` (and its one-call forms ``raised``, ``exception_name``, ``sanitise``) turns
  what the student's code raised into text a hidden check may show ("an exception": no type, no message), a
  visible one its type and at most ``VISIBLE_MESSAGE_CHARS`` of its message.
- Feedback in the viewer's language: ``Said`` (one sentence: a stable code, an English template marked with ``N_``,
  its values; ``said`` builds one), ``Words`` (a headline saying what to fix, the details, the check it waits on),
  ``text_said``/``of_text``/``words_of`` (plain text as words, shown as written).
  A check returns or raises ``CheckFailed`` with them instead of a string; the pages translate the templates.
"""

from __future__ import annotations

from graders.code.checks import (
    ArgumentRejected,
    CheckFailed,
    CheckFunc,
    CheckSpec,
    CheckUsageError,
    GraderWordedError,
    Ref,
    StudentError,
    StudentProxy,
    TimedCall,
    Timing,
    TimingSession,
    TrustedFunction,
    check,
    spec_of,
)
from graders.code.sanitise import VISIBLE_MESSAGE_CHARS, TrustedText, exception_name, raised, sanitise
from graders.results import CATEGORIES, Visibility
from graders.words import N_, Said, Words, of_text, said, text_said, words_of

__all__ = [
    "CATEGORIES",
    "N_",
    "VISIBLE_MESSAGE_CHARS",
    "ArgumentRejected",
    "CheckFailed",
    "CheckFunc",
    "CheckSpec",
    "CheckUsageError",
    "GraderWordedError",
    "Ref",
    "Said",
    "StudentError",
    "StudentProxy",
    "TimedCall",
    "Timing",
    "TimingSession",
    "TrustedFunction",
    "TrustedText",
    "Visibility",
    "Words",
    "check",
    "exception_name",
    "of_text",
    "raised",
    "said",
    "sanitise",
    "spec_of",
    "text_said",
    "words_of",
]
