"""Submission, its per-check results, and its grade: three rows, kept apart (nbgrader's split)."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from sqlalchemy import JSON, Boolean, Float, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.db import Base, UTCDateTime, utcnow

if TYPE_CHECKING:
    from app.problemsets.models import ProblemSetVersion


class Status(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    GRADED = "graded"
    ERROR = "error"


class Source(StrEnum):
    WEB = "web"
    API = "api"
    CI = "ci"


class Submission(Base):
    __tablename__ = "submission"
    __table_args__ = (UniqueConstraint("user_id", "idempotency_key"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("user.id", ondelete="CASCADE"), index=True)
    problem_set_version_id: Mapped[int] = mapped_column(ForeignKey("problem_set_version.id"), index=True)
    problem_id: Mapped[str] = mapped_column(String(64))
    kind: Mapped[str] = mapped_column(String(16))  # "answers" or "code"
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(16), default=Status.QUEUED, index=True)
    source: Mapped[str] = mapped_column(String(8), default=Source.API)
    attempt: Mapped[int] = mapped_column(Integer, default=1)
    idempotency_key: Mapped[str | None] = mapped_column(String(128), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    graded_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # Dispatch bookkeeping: who holds the job, until when, and how often the grader itself failed on it.
    claimed_by: Mapped[str | None] = mapped_column(String(100), nullable=True)
    lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    grading_attempts: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)

    checks: Mapped[list[CheckResultRow]] = relationship(
        back_populates="submission", order_by="CheckResultRow.position", cascade="all, delete-orphan"
    )
    grade: Mapped[Grade | None] = relationship(back_populates="submission", cascade="all, delete-orphan")
    problem_set_version: Mapped[ProblemSetVersion] = relationship()


class CheckResultRow(Base):
    """One row per check, the structure of DESIGN.md "Check results"."""

    __tablename__ = "check_result"

    id: Mapped[int] = mapped_column(primary_key=True)
    submission_id: Mapped[int] = mapped_column(ForeignKey("submission.id", ondelete="CASCADE"), index=True)
    position: Mapped[int] = mapped_column(Integer)
    name: Mapped[str] = mapped_column(String(100))
    category: Mapped[str] = mapped_column(String(32))
    passed: Mapped[bool] = mapped_column(Boolean)
    score: Mapped[float] = mapped_column(Float)
    max_score: Mapped[float] = mapped_column(Float)
    feedback: Mapped[str] = mapped_column(Text, default="")
    visibility: Mapped[str] = mapped_column(String(16), default="visible")
    duration_ms: Mapped[float] = mapped_column(Float, default=0.0)

    submission: Mapped[Submission] = relationship(back_populates="checks")


class Grade(Base):
    __tablename__ = "grade"

    id: Mapped[int] = mapped_column(primary_key=True)
    submission_id: Mapped[int] = mapped_column(ForeignKey("submission.id", ondelete="CASCADE"), unique=True)
    auto_score: Mapped[float] = mapped_column(Float, default=0.0)
    manual_score: Mapped[float | None] = mapped_column(Float, nullable=True)
    max_score: Mapped[float] = mapped_column(Float, default=0.0)
    verdict: Mapped[str] = mapped_column(String(32))
    message: Mapped[str] = mapped_column(Text, default="")
    grader_version: Mapped[str] = mapped_column(String(32), default="")
    graded_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    manual_graded_by_id: Mapped[int | None] = mapped_column(ForeignKey("user.id", ondelete="SET NULL"), nullable=True)
    manual_feedback: Mapped[str | None] = mapped_column(Text, nullable=True)
    # Fraction taken off for lateness under the set's late policy, fixed when the submission is graded.
    late_penalty: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")

    submission: Mapped[Submission] = relationship(back_populates="grade")

    @property
    def final_score(self) -> float:
        """Derived, never stored: automatic plus manual points, less the late penalty."""
        return round((self.auto_score + (self.manual_score or 0.0)) * (1.0 - self.late_penalty), 6)
