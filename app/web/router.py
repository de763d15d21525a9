"""Server-rendered pages for students and instructors."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import RedirectResponse

router = APIRouter(include_in_schema=False)


@router.get("/")
def index() -> RedirectResponse:
    return RedirectResponse("/docs")
