"""Setting a course up on the pages: my courses with the forms that create a course and an offering (a refused form
comes back with what was typed and the reason), and an assignment back to a draft (the settings form publishes)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse
from starlette.datastructures import FormData

from app.courses import service as courses
from app.courses.access import Access, access_for
from app.courses.models import MemberRole, Offering
from app.courses.permissions import Action
from app.deps import RowId
from app.errors import DomainError, Forbidden
from app.gradebook.drafts import unpublish
from app.users.models import User
from app.web.courses import ROLE_NAMES, form_text, settings_page
from app.web.deps import CheckedForm, WebSession, WebSettings, WebUser
from app.web.i18n import error_text, for_request, viewer_zone
from app.web.page_route import WebRoute
from app.web.rendering import render

router = APIRouter(route_class=WebRoute)
COURSE_FIELDS = ("slug", "title", "offering_slug", "time_zone")
OFFERING_FIELDS = ("offering_slug", "offering_title", "time_zone")


def _teaches(access: Access, offerings: list[Offering]) -> set[str]:
    return {o.course.slug for o in offerings if access.can(o.id, Action.EDIT_OFFERING)}


def _courses_page(
    request: Request, session: WebSession, user: User, settings: WebSettings, status: int = 200, **extra: Any
) -> Response:
    access = access_for(session, user)
    offerings = courses.my_offerings(session, access)
    return render(
        request,
        "courses/index.html",
        status,
        offerings=[(o, access.role_in(o.id)) for o in offerings],
        can_create=courses.may_create_courses(access, instructors_may=settings.instructors_create_courses),
        teaches=_teaches(access, offerings),
        titles={o.course.slug: o.course.title for o in offerings},
        roles=ROLE_NAMES,
        zones=courses.time_zones(),
        # A new offering's zone starts as the browser's own (the page script reports it), else UTC.
        default_zone=viewer_zone(request) or "UTC",
        **extra,
    )


@router.get("/courses")
def my_courses(request: Request, user: WebUser, session: WebSession, settings: WebSettings) -> Response:
    """The offerings you are a member of, by course, with your role; the forms to create a course (admins, and
    instructors where the setting allows) and an offering of a course you teach."""
    return _courses_page(request, session, user, settings)


@router.post("/courses")
def create_course(
    request: Request, form: CheckedForm, user: WebUser, session: WebSession, settings: WebSettings
) -> Response:
    """Create a course and its first offering; the creator becomes its first instructor."""
    access = access_for(session, user)
    if not courses.may_create_courses(access, instructors_may=settings.instructors_create_courses):
        raise Forbidden(for_request(request).gettext("Only admins and instructors create courses here."))
    typed = {key: form_text(form, key) for key in COURSE_FIELDS}
    try:
        course = courses.create_course(session, slug=typed["slug"], title=typed["title"])
        offering = _new_offering(session, user, course.slug, form)
    except DomainError as exc:
        session.rollback()
        return _courses_page(request, session, user, settings, 422, course_error=error_text(request, exc),
                             course_form=typed)  # fmt: skip
    session.commit()
    return RedirectResponse(f"/offerings/{offering.id}", status_code=303)


@router.post("/courses/{slug}/offerings")
def create_offering(
    request: Request, slug: str, form: CheckedForm, user: WebUser, session: WebSession, settings: WebSettings
) -> Response:
    """Add an offering to a course you teach (or any, as admin); you become its first instructor."""
    access = access_for(session, user)
    if not (user.is_admin or slug in _teaches(access, courses.my_offerings(session, access))):
        raise Forbidden(for_request(request).gettext("You do not teach this course."))
    try:
        offering = _new_offering(session, user, slug, form)
    except DomainError as exc:
        session.rollback()
        typed = {key: form_text(form, key) for key in OFFERING_FIELDS}
        return _courses_page(request, session, user, settings, 422, offering_error=error_text(request, exc),
                             offering_form=typed, offering_course=slug)  # fmt: skip
    session.commit()
    return RedirectResponse(f"/offerings/{offering.id}", status_code=303)


def _new_offering(session: WebSession, user: User, slug: str, form: FormData) -> Offering:
    offering = courses.create_offering(
        session,
        course=courses.get_course(session, slug),
        slug=form_text(form, "offering_slug") or "main",
        title=form_text(form, "offering_title") or form_text(form, "title") or slug,
        time_zone=form_text(form, "time_zone") or "UTC",
    )
    courses.enroll(session, offering=offering, email=user.email, role=MemberRole.INSTRUCTOR, name=user.display_name)
    return offering


@router.post("/assignments/{assignment_id}/unpublish")
def unpublish_assignment(
    request: Request, assignment_id: RowId, form: CheckedForm, user: WebUser, session: WebSession
) -> Response:
    """Back to a draft while no student has submitted (instructors); the settings form's Publish publishes."""
    access = access_for(session, user)
    assignment = courses.get_assignment(session, access, assignment_id, Action.ASSIGNMENTS)
    try:
        unpublish(session, assignment)
    except DomainError as exc:
        session.rollback()
        return settings_page(request, session, access, assignment_id, 409, publish_error=error_text(request, exc))
    session.commit()
    return RedirectResponse(f"/assignments/{assignment_id}/settings", status_code=303)
