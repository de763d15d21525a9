"""Roster CSV import: parse (UTF-8, with or without BOM), diff against the offering, apply in one transaction.

Columns: ``email`` (required), ``name``, ``section``, ``role``, ``student_id`` (optional; any order, any case).
Bad rows are all reported with their line numbers and nothing is written. With ``drop_missing``, students not in
the file are marked dropped; staff never are. The file's bounds (bytes, rows, characters a field) are those of
graders.input_limits; a NUL character is refused on every backend (PostgreSQL cannot store one, SQLite would).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.courses import service
from app.courses.models import MemberRole, Membership, MemberSource, MemberStatus, Offering
from app.errors import N_, Conflict, Invalid
from app.users.models import User
from graders.input_limits import MAX_CSV_BYTES, MAX_CSV_FIELD_CHARS, MAX_CSV_ROWS, NUL, NUL_MESSAGE

COLUMNS = ("email", "name", "section", "role", "student_id")


@dataclass(frozen=True)
class RosterRow:
    line: int
    email: str
    name: str
    section: str
    role: MemberRole
    student_id: str


@dataclass
class RosterDiff:
    added: list[RosterRow] = field(default_factory=list)
    changed: list[tuple[RosterRow, dict[str, tuple[str, str]]]] = field(default_factory=list)  # field: (old, new)
    unchanged: int = 0
    to_drop: list[Membership] = field(default_factory=list)
    # Sections no member has yet: often a typo ("S01" for "S1"); shown in the preview, not refused.
    new_sections: list[str] = field(default_factory=list)


class RosterInvalid(Invalid):
    def __init__(self, errors: list[dict[str, object]]) -> None:
        lines = ", ".join(str(e["line"]) for e in errors[:20])
        super().__init__(
            f"the roster has {len(errors)} bad row(s) (lines {lines}); nothing was imported",
            field="file",
            extra={"errors": errors},
        )


def parse(data: bytes) -> list[RosterRow]:
    """Rows of a roster CSV; raises RosterInvalid listing every bad row (line numbers count the header as 1).

    Callers read at most MAX_CSV_BYTES + 1 bytes: a longer file is refused here, never parsed cut short."""
    if len(data) > MAX_CSV_BYTES:
        raise RosterInvalid([{"line": 1, "msg": f"the file is larger than {MAX_CSV_BYTES} bytes; split it"}])
    try:
        text = data.decode("utf-8-sig")  # utf-8-sig drops a leading BOM (spreadsheets save one)
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise RosterInvalid(
            [{"line": line, "msg": f"not UTF-8 (byte {exc.start}); save the file as UTF-8 CSV"}]
        ) from exc
    if NUL in text:
        raise RosterInvalid([{"line": text[: text.index(NUL)].count("\n") + 1, "msg": f"the file {NUL_MESSAGE}"}])
    reader = _Rows(text)
    header = [h.strip().lower() for h in next(reader, [])]
    if "email" not in header:
        raise RosterInvalid([{"line": 1, "msg": f"no 'email' column; the header has {header}"}])
    unknown = [h for h in header if h and h not in COLUMNS]
    if unknown:
        raise RosterInvalid([{"line": 1, "msg": f"unknown columns {unknown}; expected some of {list(COLUMNS)}"}])
    rows: list[RosterRow] = []
    errors: list[dict[str, object]] = []
    seen: dict[str, int] = {}
    for values in reader:
        line = reader.line_num
        if not any(v.strip() for v in values):
            continue
        if len(rows) + len(errors) >= MAX_CSV_ROWS:
            raise RosterInvalid([{"line": line, "msg": f"more than {MAX_CSV_ROWS} rows; split the file"}])
        if any(len(v) > MAX_CSV_FIELD_CHARS for v in values):
            errors.append({"line": line, "msg": f"a field is longer than {MAX_CSV_FIELD_CHARS} characters"})
            continue
        cells = {h: (values[i].strip() if i < len(values) else "") for i, h in enumerate(header) if h}
        email = cells.get("email", "").lower()
        role_text = cells.get("role", "").lower() or MemberRole.STUDENT
        if "@" not in email or len(email) > 254 or any(c.isspace() for c in email):
            errors.append({"line": line, "msg": f"{email!r} is not an email address"})
        elif email in seen:
            errors.append({"line": line, "msg": f"{email} is also on line {seen[email]}"})
        elif role_text not in set(MemberRole):
            errors.append(
                {"line": line, "msg": f"unknown role {role_text!r}; use one of {[r.value for r in MemberRole]}"}
            )
        elif len(cells.get("section", "")) > 64 or len(cells.get("student_id", "")) > 64:
            errors.append({"line": line, "msg": "section and student_id have at most 64 characters"})
        else:
            seen[email] = line
            rows.append(
                RosterRow(
                    line,
                    email,
                    cells.get("name", "")[:200],
                    cells.get("section", ""),
                    MemberRole(role_text),
                    cells.get("student_id", ""),
                )
            )
    if errors:
        raise RosterInvalid(errors)
    return rows


class _Rows:
    """csv.reader whose own refusals (a field over its 131 072-character limit, a stray quote in strict mode) are
    a RosterInvalid naming the line, not an uncaught csv.Error. The reader cannot go on after one."""

    def __init__(self, text: str) -> None:
        self._reader = csv.reader(io.StringIO(text, newline=""))

    @property
    def line_num(self) -> int:
        return self._reader.line_num

    def __iter__(self) -> _Rows:
        return self

    def __next__(self) -> list[str]:
        try:
            return next(self._reader)
        except csv.Error as exc:
            line = self._reader.line_num
            msg = f"a field is longer than {MAX_CSV_FIELD_CHARS} characters" if "field larger" in str(exc) else str(exc)
            raise RosterInvalid([{"line": line, "msg": msg}]) from exc


def diff(session: Session, offering: Offering, rows: list[RosterRow], *, drop_missing: bool) -> RosterDiff:
    current = {m.email: m for m in service.members(session, offering)}
    known = {m.section for m in current.values() if m.section}
    out = RosterDiff(new_sections=sorted({r.section for r in rows if r.section} - known))
    for row in rows:
        member = current.get(row.email)
        if member is None:
            out.added.append(row)
            continue
        changes = {
            key: (old, new)
            for key, old, new in (
                ("role", member.role, row.role.value),
                ("section", member.section, row.section or member.section),
                ("name", member.name, row.name or member.name),
                ("student_id", member.student_id, row.student_id or member.student_id),
                ("status", member.status, _status_after(member)),
            )
            if old != new
        }
        if changes:
            out.changed.append((row, changes))
        else:
            out.unchanged += 1
    if drop_missing:
        listed = {r.email for r in rows}
        out.to_drop = [
            m
            for m in current.values()
            if m.email not in listed and m.role == MemberRole.STUDENT and m.status != MemberStatus.DROPPED
        ]
    return out


def _status_after(member: Membership) -> str:
    """Being on the roster again brings a dropped student back (active with an account, else invited)."""
    if member.status != MemberStatus.DROPPED:
        return member.status
    return MemberStatus.ACTIVE if member.user_id is not None else MemberStatus.INVITED


def apply(session: Session, offering: Offering, result: RosterDiff, *, link_accounts: bool) -> None:
    """Write the diff; the caller commits once (one transaction). Accounts are looked up in one query and the new
    rows flushed together (an enrol per row took over a minute for 5 000 rows on SQLite).

    ``link_accounts`` (an admin or the operator): a new row of an email that has an account is that account's, and
    active. Without it (an instructor) the row stays invited until that person accepts the offering's invitation,
    as service.enroll's ``link_account``.
    """
    had_instructor = bool(result.changed or result.to_drop) and bool(service.active_instructors(session, offering.id))
    emails = [row.email for row in result.added] if link_accounts else []
    accounts = {r.email: r.id for r in session.execute(select(User.email, User.id).where(User.email.in_(emails)))}
    for row in result.added:
        user_id = accounts.get(row.email)
        status = MemberStatus.ACTIVE if user_id is not None else MemberStatus.INVITED
        session.add(
            Membership(
                offering_id=offering.id,
                email=row.email,
                user_id=user_id,
                role=row.role,
                status=status,
                source=MemberSource.CSV,
                section=row.section,
                name=row.name,
                student_id=row.student_id,
            )
        )
    # The diff's rows for the changed ones (loaded once, only when there are any).
    current = {m.email: m for m in service.members(session, offering)} if result.changed else {}
    for row, changes in result.changed:
        member = current[row.email]
        for key, (_, new) in changes.items():
            setattr(member, key, new)
    for member in result.to_drop:
        member.status = MemberStatus.DROPPED
    session.flush()
    if had_instructor and not service.active_instructors(session, offering.id):
        # The file demotes or drops every instructor: nobody could run the offering (or undo this) afterwards.
        raise Conflict(N_("this file leaves the offering without an instructor: keep at least one (role "
                          "instructor) in it"), field="file")  # fmt: skip
