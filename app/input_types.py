"""Request-field types that refuse, at the schema, values that used to fail later as a 500.

- ``Instant``: a date and time kept as UTC. A naive value is read as UTC; one outside ``EARLIEST``..``LATEST`` is
  refused, which includes every value that has no UTC form (``0001-01-01T00:00+05:00`` is in year 0 in UTC, and
  ``9999-12-31T23:59-05:00`` in year 10000: ``astimezone`` raised OverflowError when the row was written) and
  leaves room for the arithmetic on stored instants (a due date plus 365 late days, plus a timed window).
  Forms and the CLI read their local times through ``to_utc``, which raises ValueError the same way.
- ``FiniteSeconds``: a seconds parameter: non-negative and finite (``?wait=nan`` made the wait loop's
  deadline NaN, which asyncio refused deep inside the request).
- ``PatchBody``: a PATCH body where a field left out stays as it is and ``null`` is accepted only for the fields
  listed in ``nullable`` (those that can be cleared); ``"join_enabled": null`` used to reach a NOT NULL column.
"""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo
from typing import Annotated, Any, ClassVar

import annotated_types
from pydantic import AfterValidator, AllowInfNan, BaseModel, ConfigDict, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(9000, 1, 1, tzinfo=UTC)
RANGE_MESSAGE = "must be a date and time from 1970 to 8999 (UTC)"


def to_utc(value: datetime, zone: tzinfo = UTC) -> datetime:
    """The instant in UTC (a naive value is read in ``zone``); ValueError when it is outside the kept range."""
    aware = value if value.tzinfo is not None else value.replace(tzinfo=zone)
    try:
        utc = aware.astimezone(UTC)
    except OverflowError:  # before year 1 or after 9999 once in UTC
        raise ValueError(f"{value.isoformat()} {RANGE_MESSAGE}") from None
    if not EARLIEST <= utc < LATEST:
        raise ValueError(f"{value.isoformat()} {RANGE_MESSAGE}")
    return utc


def _instant(value: datetime) -> datetime:
    try:
        return to_utc(value)
    except ValueError:
        raise PydanticCustomError("datetime_out_of_range", RANGE_MESSAGE) from None


Instant = Annotated[datetime, AfterValidator(_instant)]

# Constraints as metadata, not a FieldInfo: a route adds its own Query(description=...) to it.
FiniteSeconds = Annotated[float, annotated_types.Ge(0), AllowInfNan(False)]


class PatchBody(BaseModel):
    """A partial update: only the fields sent change; ``null`` only where ``nullable`` says it clears the field."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=lambda schema, cls: _drop_null(schema, cls))
    nullable: ClassVar[frozenset[str]] = frozenset()

    @field_validator("*", mode="after")
    @classmethod
    def _null_only_where_clearable(cls, value: Any, info: ValidationInfo) -> Any:
        # Runs for sent values only (defaults are not validated): a field left out stays None and means "keep".
        if value is None and info.field_name not in cls.nullable:
            raise PydanticCustomError("null_not_allowed", "cannot be null: leave the field out to keep its value")
        return value


def _drop_null(schema: dict[str, Any], cls: Any) -> None:
    """The OpenAPI document says what is accepted: no ``null`` for a field outside ``nullable``."""
    for name, prop in schema.get("properties", {}).items():
        if name in cls.nullable or "anyOf" not in prop:
            continue
        kept = [option for option in prop["anyOf"] if option.get("type") != "null"]
        if prop.get("default", "") is None:
            del prop["default"]
        if len(kept) == 1:
            del prop["anyOf"]
            prop.update(kept[0])
        else:
            prop["anyOf"] = kept
