"""Submission, its per-check results, and its grade: three rows, kept apart (nbgrader's split)."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, overload

from sqlalchemy import (
    BigInteger,
    Boolean,
    ColumnElement,
    Float,
    ForeignKey,
    Integer,
    SQLColumnExpression,
    String,
    Text,
    UniqueConstraint,
    func,
)
from sqlalchemy.ext.hybrid import hybrid_property
from sqlalchemy.orm import Mapped, mapped_column, relationship
from sqlalchemy.sql.operators import ColumnOperators

from app.db import Base, StudentJSON, UTCDateTime, utcnow
from graders.results import Verdict

if TYPE_CHECKING:
    from app.courses.models import Assignment
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
    __table_args__ = (
        UniqueConstraint("user_id", "idempotency_key"),
        # Two concurrent posts never share an attempt number: the second insert fails and allocates again.
        UniqueConstraint("user_id", "assignment_id", "problem_id", "attempt", name="uq_submission_attempt"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("user.id", ondelete="CASCADE"), index=True)
    problem_set_version_id: Mapped[int] = mapped_column(ForeignKey("problem_set_version.id"), index=True)
    # The offering's assignment it was made under (its policies and roster decide who sees it).
    assignment_id: Mapped[int | None] = mapped_column(
        ForeignKey("assignment.id", ondelete="CASCADE"), nullable=True, index=True
    )
    problem_id: Mapped[str] = mapped_column(String(64))
    # The variant of a parameterised problem this submission answered (app.problemsets.variants); NULL: the
    # problem has one variant for all. A regrade, on this version or a new one, keeps it.
    variant_seed: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    payload: Mapped[dict[str, Any]] = mapped_column(StudentJSON)
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
    assignment: Mapped[Assignment | None] = relationship()


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
    # The feedback as codes with parameters (graders.words), for the pages to word in the viewer's language; None
    # for plain text. Read as data from a stranger each time (graders.words.parse_words).
    words: Mapped[dict[str, Any] | None] = mapped_column(StudentJSON, nullable=True, default=None)

    submission: Mapped[Submission] = relationship(back_populates="checks")


# Any SQL operand of the score formula: a column, or an expression over columns.
_Sql = SQLColumnExpression[float | None]


@overload
def final_score_of(auto: float, manual: float | None, late_penalty: float, decay: float = 0.0) -> float: ...
@overload
def final_score_of(auto: _Sql, manual: _Sql, late_penalty: _Sql, decay: _Sql) -> ColumnElement[float]: ...
def final_score_of(auto: Any, manual: Any, late_penalty: Any, decay: Any = 0.0) -> Any:
    """The final score, on numbers or on SQL columns alike, unrounded:
    (auto + manual) x (1 - late penalty) x (1 - attempt decay)."""
    # No manual score yet counts 0: coalesce in SQL, where NULL would otherwise make the whole sum NULL.
    manual = func.coalesce(manual, 0.0) if isinstance(manual, ColumnOperators) else manual or 0.0
    return (auto + manual) * (1.0 - late_penalty) * (1.0 - decay)


def round_score(score: float) -> float:
    """Scores to 6 places, rounded in Python: PostgreSQL has no round(double precision, int)."""
    return round(score, 6)


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
    # Fraction taken off for the attempt number under the assignment's decay policy, fixed the same way.
    attempt_decay: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")

    submission: Mapped[Submission] = relationship(back_populates="grade")

    @hybrid_property
    def final_score(self) -> float:
        """Derived, never stored: automatic plus manual points, less the late penalty and the attempt decay; also a
        SQL expression."""
        return round_score(final_score_of(self.auto_score, self.manual_score, self.late_penalty, self.attempt_decay))

    @final_score.inplace.expression
    @classmethod
    def _final_score_sql(cls) -> ColumnElement[float]:
        # The same formula for queries (the gradebook selects it); readers round the result with round_score.
        return final_score_of(cls.auto_score, cls.manual_score, cls.late_penalty, cls.attempt_decay)

    def settle_pending(self) -> None:
        """Once scored by hand, a pending_manual grade is no longer pending: its verdict describes the final score.

        Used after a manual grade and after a regrade that keeps one, so both judge the same (discounted) score.
        """
        if self.verdict == Verdict.PENDING_MANUAL and self.manual_score is not None:
            full = self.final_score >= self.max_score - 1e-9
            self.verdict = Verdict.ACCEPTED if full else Verdict.PARTIAL
