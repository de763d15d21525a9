"""Server-rendered pages for students and instructors, and their static files (CSS, JS, vendored KaTeX)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.staticfiles import StaticFiles

from app.web import (
    account,
    aliases,
    auth,
    bulk_regrade,
    course_setup,
    courses,
    grading_queue,
    instructor,
    lti,
    lti_frame,
    preferences,
    similarity,
    student,
    webhooks,
)
from app.web.rendering import HERE

router = APIRouter(include_in_schema=False)
router.include_router(auth.router)
router.include_router(account.router)
router.include_router(student.router)
router.include_router(instructor.router)
router.include_router(courses.router)
router.include_router(course_setup.router)
router.include_router(grading_queue.router)
router.include_router(webhooks.router)
router.include_router(bulk_regrade.router)
router.include_router(aliases.router)
router.include_router(lti.router)
router.include_router(lti_frame.router)
router.include_router(preferences.router)
router.include_router(similarity.router)
router.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
