"""Text fields of request schemas: a NUL character is refused at the schema, the same way on both backends.

PostgreSQL cannot store NUL in text or JSON columns (psycopg raises DataError, a 500), SQLite can: without this a
submission with NUL in an answer was accepted everywhere and failed grading only on PostgreSQL. Path, query and
header values are checked for every route by app.limits.RefuseNul; bodies use these types.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator
from pydantic_core import PydanticCustomError

from graders.input_limits import NUL, NUL_MESSAGE


def refuse_nul(value: str) -> str:
    if NUL in value:
        raise PydanticCustomError("nul_character", NUL_MESSAGE)
    return value


SafeStr = Annotated[str, AfterValidator(refuse_nul)]
