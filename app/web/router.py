"""Server-rendered pages for students and instructors, and their static files (CSS, JS, vendored KaTeX)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.staticfiles import StaticFiles

from app.web import auth, courses, grading_queue, instructor, preferences, student
from app.web.rendering import HERE

router = APIRouter(include_in_schema=False)
router.include_router(auth.router)
router.include_router(student.router)
router.include_router(instructor.router)
router.include_router(courses.router)
router.include_router(grading_queue.router)
router.include_router(preferences.router)
router.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
