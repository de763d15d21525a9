"""`autograder courses|offerings|roster|assignments|overrides`: run a course from the server's shell (as admin)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from sqlalchemy import select

from app.cli.common import admin_session
from app.courses import roster
from app.courses import service as courses
from app.courses.access import operator_access
from app.courses.models import Assignment, Counts, Course, MemberRole, Offering, Release, Variants
from app.courses.permissions import Action
from app.gradebook.overrides import affected_users, rescore
from app.input_types import to_utc
from app.lti.passback import requeue_held

courses_app = typer.Typer(help="Courses (admins).", no_args_is_help=True)
offerings_app = typer.Typer(help="Offerings (terms) of a course.", no_args_is_help=True)
roster_app = typer.Typer(help="An offering's roster.", no_args_is_help=True)
assignments_app = typer.Typer(help="Problem sets assigned in an offering.", no_args_is_help=True)
overrides_app = typer.Typer(help="Extensions and extra attempts.", no_args_is_help=True)


def _when(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        value = datetime.fromisoformat(text)
    except ValueError as exc:
        raise typer.BadParameter(f"{text!r} is not an ISO date such as 2027-03-01T23:59+01:00") from exc
    try:
        return to_utc(value)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc


@courses_app.command("create")
def create_course(
    slug: Annotated[str, typer.Argument(help="e.g. attention")],
    title: Annotated[str, typer.Option(help="shown to everyone")] = "",
) -> None:
    """Create a course."""
    with admin_session() as session:
        course = courses.create_course(session, slug=slug, title=title or slug)
        session.commit()
        typer.echo(f"course {course.slug} (id {course.id})")


@courses_app.command("list")
def list_courses() -> None:
    """Every course with its offerings (id, slug, members)."""
    with admin_session() as session:
        for course in session.scalars(select(Course).order_by(Course.slug)):
            typer.echo(f"{course.slug}: {course.title}")
            for offering in course.offerings:
                count = len(courses.members(session, offering))
                mark = " (default)" if offering.is_default else ""
                typer.echo(f"  offering {offering.id} {offering.slug}: {offering.title}, {count} members{mark}")


@offerings_app.command("create")
def create_offering(
    course: Annotated[str, typer.Argument(help="the course slug")],
    slug: Annotated[str, typer.Argument(help="e.g. 2027-spring")],
    title: Annotated[str, typer.Option()] = "",
    time_zone: Annotated[str, typer.Option(help="IANA name, e.g. Europe/Berlin")] = "UTC",
    instructor: Annotated[str | None, typer.Option(help="email of its first instructor")] = None,
) -> None:
    """Add an offering (a term) to a course."""
    with admin_session() as session:
        offering = courses.create_offering(
            session, course=courses.get_course(session, course), slug=slug, title=title or slug, time_zone=time_zone
        )
        if instructor:
            courses.enroll(session, offering=offering, email=instructor, role=MemberRole.INSTRUCTOR)
        session.commit()
        typer.echo(f"offering {offering.id} ({course}/{offering.slug})")


@roster_app.command("import")
def import_roster(
    offering: Annotated[int, typer.Argument(help="the offering id")],
    file: Annotated[
        Path, typer.Argument(exists=True, dir_okay=False, help="CSV: email[,name,section,role,student_id]")
    ],
    apply: Annotated[bool, typer.Option("--apply", help="write it (default: preview only)")] = False,
    drop_missing: Annotated[bool, typer.Option("--drop-missing", help="drop students not in the file")] = False,
) -> None:
    """Preview (or with --apply, write in one transaction) a roster CSV; bad rows are listed and nothing is written."""
    with admin_session() as session:
        target = courses.get_offering(session, operator_access(session), offering, Action.ROSTER)
        result = roster.diff(session, target, roster.parse(file.read_bytes()), drop_missing=drop_missing)
        for row in result.added:
            typer.echo(f"+ {row.email} ({row.role}{', ' + row.section if row.section else ''})")
        for row, changes in result.changed:
            typer.echo(f"~ {row.email}: " + ", ".join(f"{k} {old!r} -> {new!r}" for k, (old, new) in changes.items()))
        for member in result.to_drop:
            typer.echo(f"- {member.email} (dropped)")
        typer.echo(
            f"{len(result.added)} added, {len(result.changed)} changed, {result.unchanged} unchanged, "
            f"{len(result.to_drop)} dropped"
        )
        if apply:
            roster.apply(session, target, result, link_accounts=True)  # the operator: an admin
            session.commit()
            typer.echo("applied")
        else:
            typer.echo("preview only: run again with --apply to write it")


_POLICY_HELP = {
    "due": "due date, ISO (no zone: UTC)",
    "release": f"one of {[r.value for r in Release]}",
}


# Each policy option of `assignments add` and `assignments set` -> the assignment column it sets.
_POLICY_COLUMNS = (
    ("open_at", "open_at"),
    ("due", "due_at"),
    ("max_attempts", "max_attempts"),
    ("cooldown", "cooldown_s"),
    ("decay", "decay_per_attempt"),
    ("counts", "counts"),
    ("release_scores", "release_scores"),
    ("release_feedback", "release_feedback"),
    ("release_explanation", "release_explanation"),
    ("release_answer_key", "release_answer_key"),
    ("time_limit", "time_limit_min"),
    ("new_variant_after", "new_variant_after"),
    ("variants", "variants"),
)
_DATE_COLUMNS = ("open_at", "due_at")


def _policy(options: Mapping[str, Any]) -> dict[str, Any]:
    """The columns the policy options given set (an option left out is None and changes nothing); dates parsed."""
    values = {column: options[option] for option, column in _POLICY_COLUMNS}
    values |= {column: _when(values[column]) for column in _DATE_COLUMNS}
    return {column: value for column, value in values.items() if value is not None}


OpenOpt = Annotated[str | None, typer.Option("--open", help="open date, ISO")]
DueOpt = Annotated[str | None, typer.Option("--due", help=_POLICY_HELP["due"])]
AttemptsOpt = Annotated[int | None, typer.Option(help="attempts per problem")]
CooldownOpt = Annotated[int | None, typer.Option(help="seconds between attempts")]
DecayOpt = Annotated[float | None, typer.Option(help="fraction lost per attempt after the first")]
CountsOpt = Annotated[Counts | None, typer.Option(help="best or last")]
ReleaseOpt = Annotated[Release | None, typer.Option(help=_POLICY_HELP["release"])]
TimeLimitOpt = Annotated[int | None, typer.Option(help="minutes from each student's first open (timed)")]
NewVariantOpt = Annotated[
    int | None, typer.Option(help="a parameterised problem draws new numbers after this many attempts")
]
VariantsOpt = Annotated[
    Variants | None,
    typer.Option(help="per_student: each student their own numbers; shared: all the set's own (seed 0)"),
]


@assignments_app.command("add")
def add_assignment(
    offering: Annotated[int, typer.Argument(help="the offering id")],
    problem_set: Annotated[str, typer.Argument(help="the set's id, e.g. attention")],
    open_at: OpenOpt = None,
    due: DueOpt = None,
    max_attempts: AttemptsOpt = None,
    cooldown: CooldownOpt = None,
    decay: DecayOpt = None,
    counts: CountsOpt = None,
    release_scores: ReleaseOpt = None,
    release_feedback: ReleaseOpt = None,
    release_explanation: ReleaseOpt = None,
    release_answer_key: ReleaseOpt = None,
    time_limit: TimeLimitOpt = None,
    new_variant_after: NewVariantOpt = None,
    variants: VariantsOpt = None,
) -> None:
    """Assign a loaded set in an offering with its dates and policies."""
    policy = _policy(locals())  # first, while the command's options are its only names
    with admin_session() as session:
        target = courses.get_offering(session, operator_access(session), offering, Action.ASSIGNMENTS)
        assignment = courses.assign(
            session, offering=target, problem_set=courses.problem_set_by_slug(session, problem_set), **policy
        )
        session.commit()
        typer.echo(f"assignment {assignment.id}: {problem_set} in offering {offering}")


@assignments_app.command("set")
def set_assignment(
    assignment: Annotated[int, typer.Argument(help="the assignment id")],
    open_at: OpenOpt = None,
    due: DueOpt = None,
    max_attempts: AttemptsOpt = None,
    cooldown: CooldownOpt = None,
    decay: DecayOpt = None,
    counts: CountsOpt = None,
    release_scores: ReleaseOpt = None,
    release_feedback: ReleaseOpt = None,
    release_explanation: ReleaseOpt = None,
    release_answer_key: ReleaseOpt = None,
    time_limit: TimeLimitOpt = None,
    new_variant_after: NewVariantOpt = None,
    variants: VariantsOpt = None,
) -> None:
    """Change an assignment's dates or policies (only the options given)."""
    policy = _policy(locals())  # first, while the command's options are its only names
    with admin_session() as session:
        row = courses.get_assignment(session, operator_access(session), assignment, Action.ASSIGNMENTS)
        courses.update_assignment(session, row, **policy)
        requeue_held(session, row.id)  # LMS scores the release policy held: posted now if released
        session.commit()
        typer.echo(f"assignment {row.id} updated")


@assignments_app.command("list")
def list_assignments(offering: Annotated[int, typer.Argument(help="the offering id")]) -> None:
    """The offering's assignments with their ids, dates and attempt limits."""
    with admin_session() as session:
        for a in session.scalars(select(Assignment).where(Assignment.offering_id == offering).order_by(Assignment.id)):
            typer.echo(
                f"{a.id} {a.problem_set.slug}: due {a.due_at or '-'}, attempts {a.max_attempts or 'unlimited'}, "
                f"answer key {a.release_answer_key}, variants {a.variants}"
                + (f", timed {a.time_limit_min} min" if a.time_limit_min else "")
            )


@overrides_app.command("add")
def add_override(
    assignment: Annotated[int, typer.Argument(help="the assignment id")],
    email: Annotated[str | None, typer.Option(help="the member")] = None,
    section: Annotated[str | None, typer.Option(help="or a whole section")] = None,
    due: DueOpt = None,
    extra_attempts: Annotated[int, typer.Option(help="attempts on top of the limit")] = 0,
    time_multiplier: Annotated[
        float, typer.Option(min=1.0, max=10.0, help="stretches a timed assignment's limit (1.5: half again)")
    ] = 1.0,
    note: Annotated[str, typer.Option()] = "",
) -> None:
    """Give a member (or a section) another due date or extra attempts; theirs wins over the assignment's."""
    with admin_session() as session:
        row = courses.get_assignment(session, operator_access(session), assignment, Action.OVERRIDES)
        offering = session.get(Offering, row.offering_id)
        assert offering is not None
        member = courses.find_member(session, offering, member_id=None, email=email) if email else None
        override = courses.set_override(
            session,
            assignment=row,
            member=member,
            section=section,
            due_at=_when(due),
            late_penalty_per_day=None,
            extra_attempts=extra_attempts,
            time_multiplier=time_multiplier,
            note=note,
        )
        rescore(session, row, affected_users(session, override))  # late penalties and LMS scores
        session.commit()
        typer.echo(f"override {override.id} on assignment {assignment}")
