"""Text fields of request schemas: a NUL character or a lone surrogate is refused at the schema, the same way on
both backends.

PostgreSQL cannot store NUL in text or JSON columns (psycopg raises DataError, a 500), SQLite can: without this a
submission with NUL in an answer was accepted everywhere and failed grading only on PostgreSQL. Path, query and
header values are checked for every route by app.limits.RefuseNul; bodies use these types.

JSON may spell half of a surrogate pair alone (``"\ud800"``): Python keeps it in the string, both databases store
it escaped, and every page that shows it then fails to encode it (a 500 on the gradebook for one student's answer).
Answers stored before this refusal read back with U+FFFD in its place (app.db.StudentJSON), and what student code
says over the sandbox's wire gets the same replacement (graders.sandbox.wire).

"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator
from pydantic_core import PydanticCustomError

from graders.input_limits import NUL, NUL_MESSAGE

SURROGATE_MESSAGE = "must be valid Unicode text (a lone surrogate such as \\ud800 is not)"


def refuse_unstorable(value: str) -> str:
    if NUL in value:
        raise PydanticCustomError("nul_character", NUL_MESSAGE)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise PydanticCustomError("lone_surrogate", SURROGATE_MESSAGE) from None
    return value


SafeStr = Annotated[str, AfterValidator(refuse_unstorable)]

# The sandbox's wire (graders.sandbox.wire.scrub_surrogates) does the same to what student code says. It keeps its
# own copy because the jail holds only graders/sandbox; this one keeps the database layer, and so every command that
# opens the database, from importing the sandbox.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def scrub_surrogates(value: Any) -> Any:
    """``value`` (a JSON tree) with each lone surrogate in its strings replaced by U+FFFD."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [scrub_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {scrub_surrogates(k): scrub_surrogates(v) for k, v in value.items()}
    return value
