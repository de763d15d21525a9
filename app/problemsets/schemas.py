"""Response models of the problem-set endpoints."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel


class ProblemSetSummary(BaseModel):
    id: str
    title: str
    version: int
    problems: int
    due_at: datetime | None


class UploadResult(BaseModel):
    id: str
    version: int
    created: bool
    content_hash: str
    report: dict[str, Any]


class VersionPublic(BaseModel):
    number: int
    label: str
    content_hash: str
    created_at: datetime
    report: dict[str, Any]
