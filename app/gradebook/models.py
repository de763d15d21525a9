"""A bulk regrade: which submissions an instructor requeued together, and each one's score before (for progress)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from app.db import Base, UTCDateTime, utcnow


class RegradeBatch(Base):
    __tablename__ = "regrade_batch"

    id: Mapped[int] = mapped_column(primary_key=True)
    assignment_id: Mapped[int] = mapped_column(ForeignKey("assignment.id", ondelete="CASCADE"), index=True)
    problem_id: Mapped[str] = mapped_column(String(64))
    created_by_id: Mapped[int | None] = mapped_column(ForeignKey("user.id", ondelete="SET NULL"), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # The selection as asked for: {"since": iso or null, "below_full": bool}.
    filters: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    # submission id (as text: JSON keys) -> its final score before the regrade, null when it had no grade.
    before: Mapped[dict[str, float | None]] = mapped_column(JSON, default=dict)
