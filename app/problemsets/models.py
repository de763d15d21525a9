"""Problem sets and their immutable versions (a re-upload makes a new version)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Boolean, ForeignKey, Integer, LargeBinary, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.db import Base, UTCDateTime, utcnow


class ProblemSet(Base):
    __tablename__ = "problem_set"

    id: Mapped[int] = mapped_column(primary_key=True)
    slug: Mapped[str] = mapped_column(String(64), unique=True)
    title: Mapped[str] = mapped_column(String(300))
    is_visible: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    versions: Mapped[list[ProblemSetVersion]] = relationship(
        back_populates="problem_set", order_by="ProblemSetVersion.number"
    )


class ProblemSetVersion(Base):
    """One uploaded version. Its content (spec, files) never changes; submissions point at the version they used."""

    __tablename__ = "problem_set_version"
    __table_args__ = (UniqueConstraint("problem_set_id", "number"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    problem_set_id: Mapped[int] = mapped_column(ForeignKey("problem_set.id", ondelete="CASCADE"), index=True)
    number: Mapped[int] = mapped_column(Integer)
    label: Mapped[str] = mapped_column(String(64), default="")
    content_hash: Mapped[str] = mapped_column(String(64), index=True)
    spec: Mapped[dict[str, Any]] = mapped_column(JSON)
    # The whole set (prompts, checks, solutions, mutants) as a deterministic tar.gz, so any worker can grade it.
    archive: Mapped[bytes] = mapped_column(LargeBinary, deferred=True)
    validation_report: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    # The checking code (app.problemsets.checking_code) the report was made with: with content_hash, the key of
    # the stored gate report. NULL: an older checking code, or a code set stored without its mutant gate.
    checked_with: Mapped[str | None] = mapped_column(String(64), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    created_by_id: Mapped[int | None] = mapped_column(ForeignKey("user.id", ondelete="SET NULL"), nullable=True)

    problem_set: Mapped[ProblemSet] = relationship(back_populates="versions")


class ProblemVariant(Base):
    """A parameterised problem's variant for one seed, as its generator gave it in the set's checker (validated):
    a cache, so that a page view or a grading does not start the checker again. A version never changes, so
    neither does its variant for a seed."""

    __tablename__ = "problem_variant"
    __table_args__ = (UniqueConstraint("problem_set_version_id", "problem_id", "seed"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    problem_set_version_id: Mapped[int] = mapped_column(
        ForeignKey("problem_set_version.id", ondelete="CASCADE"), index=True
    )
    problem_id: Mapped[str] = mapped_column(String(64))
    seed: Mapped[int] = mapped_column(BigInteger)
    data: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
