"""Request and response models of the course, offering, roster, assignment and override endpoints."""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from app.courses.models import Counts, MemberRole, MemberStatus, Release, Variants
from app.input_types import Instant, PatchBody

_ID = {"ge": 1, "le": 2**31 - 1}


class CourseCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    slug: str = Field(max_length=64, examples=["attention"])
    title: str = Field(max_length=300)


class OfferingPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: int
    course_id: int
    slug: str
    title: str
    time_zone: str
    starts_at: datetime | None
    ends_at: datetime | None
    join_enabled: bool
    self_join_until: datetime | None
    ta_can_override: bool
    my_role: str | None = Field(None, description="your role in it")
    join_code: str | None = Field(None, description="shown to those who manage the roster")


class CoursePublic(BaseModel):
    id: int
    slug: str
    title: str
    offerings: list[OfferingPublic] = Field(description="the offerings of it you are a member of")


class OfferingCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    slug: str = Field(max_length=64, examples=["2027-spring"])
    title: str = Field(max_length=300)
    time_zone: str = Field("UTC", max_length=64, description="IANA name; pages show dates in the viewer's zone")
    starts_at: Instant | None = Field(None, description="UTC when no zone is given")
    ends_at: Instant | None = None


class OfferingUpdate(PatchBody):
    nullable: ClassVar[frozenset[str]] = frozenset({"starts_at", "ends_at", "self_join_until"})
    title: str | None = Field(None, max_length=300)
    time_zone: str | None = Field(None, max_length=64)
    starts_at: Instant | None = Field(None, description="null: no start date")
    ends_at: Instant | None = Field(None, description="null: no end date")
    join_enabled: bool | None = Field(None, description="switch self-enrolment by join code on or off")
    self_join_until: Instant | None = Field(None, description="the self-enrolment cut-off; null: none")
    ta_can_override: bool | None = Field(None, description="TAs may give extensions and extra attempts")


class JoinCode(BaseModel):
    join_code: str
    join_url: str
    join_enabled: bool


class JoinRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    code: str = Field(max_length=32)


class MemberCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    email: str = Field(max_length=254)
    role: MemberRole = MemberRole.STUDENT
    section: str = Field("", max_length=64)
    name: str = Field("", max_length=200)
    student_id: str = Field("", max_length=64)


class MemberUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    role: MemberRole | None = None
    status: MemberStatus | None = None
    section: str | None = Field(None, max_length=64)


class MemberPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: int
    offering_id: int
    user_id: int | None = Field(description="null until the person has an account (pending by email)")
    email: str
    name: str
    student_id: str
    role: str
    status: str
    source: str
    section: str


class InvitationPublic(BaseModel):
    email: str
    expires_at: datetime
    mailed: bool = Field(description="true: mailed through AUTOGRADER_SMTP_*; false: pass `link` on yourself")
    link: str | None = Field(description="the one-time set-password link, when it was not mailed (shown once)")
    mail_error: str | None = Field(None, description="why mailing failed, when it was tried")


class RosterRowPublic(BaseModel):
    line: int
    email: str
    role: str
    section: str


class RosterChange(BaseModel):
    line: int
    email: str
    changes: dict[str, list[str]] = Field(description="field -> [old, new]")


class RosterPreview(BaseModel):
    applied: bool = Field(description="false: a preview, nothing written; true: written in one transaction")
    added: list[RosterRowPublic]
    changed: list[RosterChange]
    unchanged: int
    dropped: list[str] = Field(description="students not in the file marked dropped (drop mode; never staff)")
    new_sections: list[str] = Field(description="sections no member had before: check them for typos")


class Policy(PatchBody):
    """Assignment settings; every field is optional when updating."""

    # null clears these (no pin, no dates, the set's own late policy, unlimited, untimed); the others have a value.
    nullable: ClassVar[frozenset[str]] = frozenset(
        {"pinned_version", "open_at", "due_at", "late_penalty_per_day", "max_late_days", "max_attempts",
         "time_limit_min", "new_variant_after"}
    )  # fmt: skip
    pinned_version: int | None = Field(None, ge=1, description="a version number to pin; omit for the latest")
    open_at: Instant | None = None
    due_at: Instant | None = None
    late_penalty_per_day: float | None = Field(None, ge=0, le=1, description="null: the set's own late policy")
    max_late_days: int | None = Field(None, ge=0, le=365)
    max_attempts: int | None = Field(None, ge=1, le=10_000, description="per problem; null: unlimited")
    cooldown_s: int | None = Field(None, ge=0, le=7 * 86400)
    decay_per_attempt: float | None = Field(None, ge=0, le=1, description="fraction lost per attempt after the first")
    counts: Counts | None = Field(None, description="which attempt counts: best or last")
    release_scores: Release | None = None
    release_feedback: Release | None = None
    release_explanation: Release | None = Field(None, description="it also waits for the answer key's release")
    release_answer_key: Release | None = None
    problem_policies: dict[str, dict[str, Any]] | None = Field(
        None, description='per-problem overrides, e.g. {"q1": {"max_attempts": 5, "release": {"answer_key": "never"}}}'
    )
    time_limit_min: int | None = Field(
        None,
        ge=1,
        le=7 * 24 * 60,
        description="a timed assignment: minutes from each student's first open (x their override's "
        "time_multiplier), never past the due date; null: untimed",
    )
    new_variant_after: int | None = Field(
        None,
        ge=1,
        le=10_000,
        description="a parameterised problem gives a student a new variant (new numbers) after this many of their "
        "attempts at it; null: one variant per student",
    )
    variants: Variants | None = Field(
        None,
        description="per_student: each student their own numbers in a problem with parameters; shared: every "
        "student the set's own numbers (seed 0). Default when assigned: per_student for a set with parameters, "
        "shared for one without",
    )


class AssignmentCreate(Policy):
    problem_set: str = Field(max_length=64, examples=["attention"])


class AssignmentPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: int
    offering_id: int
    problem_set: str
    pinned_version_id: int | None
    open_at: datetime | None
    due_at: datetime | None
    late_penalty_per_day: float | None
    max_late_days: int | None
    max_attempts: int | None
    cooldown_s: int
    decay_per_attempt: float
    counts: str
    release_scores: str
    release_feedback: str
    release_explanation: str
    release_answer_key: str
    problem_policies: dict[str, Any]
    time_limit_min: int | None
    new_variant_after: int | None
    variants: str


class OverrideCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    member: int | None = Field(None, ge=1, le=2**31 - 1, description="a membership id (or give email)")
    email: str | None = Field(None, max_length=254)
    section: str | None = Field(None, max_length=64, description="an override for a whole section")
    due_at: Instant | None = Field(None, description="the new due date, absolute")
    late_penalty_per_day: float | None = Field(None, ge=0, le=1)
    extra_attempts: int = Field(0, ge=0, le=10_000)
    time_multiplier: float = Field(1.0, ge=1, le=10, description="stretches a timed assignment's time limit")
    note: str = Field("", max_length=300)


class OverridePublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: int
    assignment_id: int
    membership_id: int | None
    section: str | None
    due_at: datetime | None
    late_penalty_per_day: float | None
    extra_attempts: int
    time_multiplier: float
    note: str
