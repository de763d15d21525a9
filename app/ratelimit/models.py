"""The database limiter's counters: one row per limited subject, reset when its window changes."""

from __future__ import annotations

from sqlalchemy import BigInteger, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from app.db import Base


class RateLimitCounter(Base):
    __tablename__ = "rate_limit_counter"

    # "<limit name>:<subject>", e.g. "submit-user:42"; an account is named by a hash of its email, never the email.
    bucket: Mapped[str] = mapped_column(String(200), primary_key=True)
    window_start: Mapped[int] = mapped_column(BigInteger)  # unix seconds, a multiple of the window length
    count: Mapped[int] = mapped_column(Integer)
