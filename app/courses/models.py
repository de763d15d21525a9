"""Course -> offering -> membership / assignment -> override (PrairieLearn's and Autolab's split).

A course owns content; an offering is one term of it with its own roster, dates and join code. Every permission
below the admin is a membership's role in one offering (app.courses.permissions).
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from sqlalchemy import JSON, Boolean, Float, ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.db import Base, UTCDateTime, utcnow

if TYPE_CHECKING:
    from app.problemsets.models import ProblemSet


class MemberRole(StrEnum):
    INSTRUCTOR = "instructor"
    TA = "ta"
    STUDENT = "student"
    OBSERVER = "observer"


class MemberStatus(StrEnum):
    INVITED = "invited"  # on the roster, no account yet (or not yet joined): no access
    ACTIVE = "active"
    DROPPED = "dropped"  # keeps the row and the submissions; no access at all


class MemberSource(StrEnum):
    MANUAL = "manual"
    CSV = "csv"
    JOIN_CODE = "join_code"
    LTI = "lti"


class Release(StrEnum):
    """When a result is shown to a student."""

    IMMEDIATELY = "immediately"
    AFTER_DUE = "after_due"
    AFTER_ATTEMPTS = "after_attempts"  # the attempts have run out, or the problem has full marks
    NEVER = "never"


class Counts(StrEnum):
    BEST = "best"
    LAST = "last"


class Variants(StrEnum):
    """Who gets which numbers in a problem with parameters (docs/courses.md, "Variants")."""

    PER_STUDENT = "per_student"  # each student their own seed (app.problemsets.variants.seed_for)
    SHARED = "shared"  # every student seed 0: the set's own numbers, as before parameters


class Course(Base):
    __tablename__ = "course"

    id: Mapped[int] = mapped_column(primary_key=True)
    slug: Mapped[str] = mapped_column(String(64), unique=True)
    title: Mapped[str] = mapped_column(String(300))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    offerings: Mapped[list[Offering]] = relationship(back_populates="course", order_by="Offering.id")


class Offering(Base):
    __tablename__ = "offering"
    __table_args__ = (UniqueConstraint("course_id", "slug"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    course_id: Mapped[int] = mapped_column(ForeignKey("course.id", ondelete="CASCADE"), index=True)
    slug: Mapped[str] = mapped_column(String(64))
    title: Mapped[str] = mapped_column(String(300))
    time_zone: Mapped[str] = mapped_column(String(64), default="UTC")
    starts_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    ends_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # Stored in plain text: it is a shared classroom code, not a credential (anyone in the room may read it).
    join_code: Mapped[str | None] = mapped_column(String(32), unique=True, nullable=True)
    join_enabled: Mapped[bool] = mapped_column(Boolean, default=False)
    self_join_until: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    ta_can_override: Mapped[bool] = mapped_column(Boolean, default=False)
    # The offering that legacy paths use: users created with a course role, sets loaded from disk, old data.
    is_default: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    course: Mapped[Course] = relationship(back_populates="offerings")


class Membership(Base):
    """A user's (or, before the first login, an email's) place in an offering."""

    __tablename__ = "membership"
    __table_args__ = (UniqueConstraint("offering_id", "email"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    offering_id: Mapped[int] = mapped_column(ForeignKey("offering.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[int | None] = mapped_column(ForeignKey("user.id", ondelete="CASCADE"), nullable=True, index=True)
    email: Mapped[str] = mapped_column(String(254))
    name: Mapped[str] = mapped_column(String(200), default="")
    student_id: Mapped[str] = mapped_column(String(64), default="")
    role: Mapped[str] = mapped_column(String(16), default=MemberRole.STUDENT)
    status: Mapped[str] = mapped_column(String(16), default=MemberStatus.ACTIVE)
    source: Mapped[str] = mapped_column(String(16), default=MemberSource.MANUAL)
    section: Mapped[str] = mapped_column(String(64), default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    offering: Mapped[Offering] = relationship()


class Assignment(Base):
    """A problem set in an offering, with its dates and its attempt and release policies.

    ``problem_policies`` holds per-problem overrides of the same keys: {"q1": {"max_attempts": 5, "release":
    {"answer_key": "never"}}}.
    """

    __tablename__ = "assignment"
    __table_args__ = (UniqueConstraint("offering_id", "problem_set_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    offering_id: Mapped[int] = mapped_column(ForeignKey("offering.id", ondelete="CASCADE"), index=True)
    problem_set_id: Mapped[int] = mapped_column(ForeignKey("problem_set.id", ondelete="CASCADE"), index=True)
    # None: the latest version; else this version stays the one students see and are graded against.
    pinned_version_id: Mapped[int | None] = mapped_column(
        ForeignKey("problem_set_version.id", ondelete="SET NULL"), nullable=True
    )
    open_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    due_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # None: the set's own late policy (problemset.yaml) applies.
    late_penalty_per_day: Mapped[float | None] = mapped_column(Float, nullable=True)
    max_late_days: Mapped[int | None] = mapped_column(Integer, nullable=True)
    max_attempts: Mapped[int | None] = mapped_column(Integer, nullable=True)  # None: unlimited
    cooldown_s: Mapped[int] = mapped_column(Integer, default=0)
    decay_per_attempt: Mapped[float] = mapped_column(Float, default=0.0)
    counts: Mapped[str] = mapped_column(String(8), default=Counts.BEST)
    release_scores: Mapped[str] = mapped_column(String(16), default=Release.IMMEDIATELY)
    release_feedback: Mapped[str] = mapped_column(String(16), default=Release.IMMEDIATELY)
    release_explanation: Mapped[str] = mapped_column(String(16), default=Release.IMMEDIATELY)
    release_answer_key: Mapped[str] = mapped_column(String(16), default=Release.AFTER_ATTEMPTS)
    problem_policies: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    # A timed assignment: each student's clock starts when they first open it (AssignmentStart); their time ends
    # after this many minutes x their override's time_multiplier, and never after the due date. None: untimed.
    time_limit_min: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # A parameterised problem draws a new variant for a student after this many of their attempts at it
    # (PrairieLearn's "new variant after N attempts"); None: one variant per student (app.problemsets.variants).
    new_variant_after: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # Per student, or one variant every student shares (Variants). Chosen when the set is assigned (shared for a set
    # without parameters) and kept when a new version adds some, so no student's numbers change mid-term unasked.
    variants: Mapped[str] = mapped_column(String(16), default=Variants.PER_STUDENT)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    offering: Mapped[Offering] = relationship()
    problem_set: Mapped[ProblemSet] = relationship()
    overrides: Mapped[list[Override]] = relationship(
        back_populates="assignment", cascade="all, delete-orphan", order_by="Override.id"
    )

    @property
    def shared_variant(self) -> bool:
        """Every student answers the one shared variant (seed 0) of a problem with parameters."""
        return self.variants == Variants.SHARED


class Override(Base):
    """An accommodation for one member or one section: absolute dates (never deltas), extra attempts.

    The most specific wins: a member's override over their section's over the assignment.
    """

    __tablename__ = "assignment_override"

    id: Mapped[int] = mapped_column(primary_key=True)
    assignment_id: Mapped[int] = mapped_column(ForeignKey("assignment.id", ondelete="CASCADE"), index=True)
    membership_id: Mapped[int | None] = mapped_column(
        ForeignKey("membership.id", ondelete="CASCADE"), nullable=True, index=True
    )
    section: Mapped[str | None] = mapped_column(String(64), nullable=True)
    due_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    late_penalty_per_day: Mapped[float | None] = mapped_column(Float, nullable=True)
    extra_attempts: Mapped[int] = mapped_column(Integer, default=0)
    # Stretches a timed assignment's time limit for this member or section (1.5: half as much time again).
    time_multiplier: Mapped[float] = mapped_column(Float, default=1.0)
    note: Mapped[str] = mapped_column(String(300), default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    assignment: Mapped[Assignment] = relationship(back_populates="overrides")


class AssignmentStart(Base):
    """When a student first opened a timed assignment: their clock. One row per student and assignment."""

    __tablename__ = "assignment_start"
    __table_args__ = (UniqueConstraint("assignment_id", "user_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    assignment_id: Mapped[int] = mapped_column(ForeignKey("assignment.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("user.id", ondelete="CASCADE"), index=True)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
