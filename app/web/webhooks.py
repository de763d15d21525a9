"""An offering's webhooks page (its instructors): register an endpoint (the secret shown once), the delivery log of
each endpoint with a redeliver button per delivery, a test ping, delete. The same service as the API."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse

from app.courses import service as courses
from app.courses.access import access_for
from app.courses.models import Offering
from app.courses.permissions import Action
from app.deps import RowId
from app.errors import DomainError
from app.users.models import User
from app.web.deps import CheckedForm, WebSession, WebSettings, WebUser
from app.web.i18n import error_text
from app.web.page_route import WebRoute
from app.web.rendering import render
from app.webhooks import service
from app.webhooks.service import EVENTS

router = APIRouter(route_class=WebRoute)


def _offering(session: WebSession, user: User, offering_id: int) -> Offering:
    return courses.get_offering(session, access_for(session, user), offering_id, Action.WEBHOOKS)


def _page(request: Request, session: WebSession, offering: Offering, status: int = 200, **extra: Any) -> Response:
    endpoints = service.list_offering_endpoints(session, offering_id=offering.id)
    return render(
        request,
        "courses/webhooks.html",
        status,
        offering=offering,
        events=EVENTS,
        endpoints=[(e, service.deliveries(session, endpoint=e, limit=20)) for e in endpoints],
        **extra,
    )


@router.get("/offerings/{offering_id}/webhooks")
def webhooks_page(request: Request, offering_id: RowId, user: WebUser, session: WebSession) -> Response:
    """The offering's endpoints and their delivery logs (instructors)."""
    return _page(request, session, _offering(session, user, offering_id))


@router.post("/offerings/{offering_id}/webhooks")
def register(
    request: Request, offering_id: RowId, form: CheckedForm, user: WebUser, session: WebSession, settings: WebSettings
) -> Response:
    """Register an endpoint; the page shows its secret this once."""
    offering = _offering(session, user, offering_id)
    url = form.get("url")
    events = [e for e in form.getlist("events") if isinstance(e, str)]
    try:
        endpoint = service.create_endpoint(
            session, settings=settings, user=user, token_id=None, url=url if isinstance(url, str) else "",
            events=events, offering_id=offering.id,
        )  # fmt: skip
    except DomainError as exc:
        session.rollback()
        shown = error_text(request, exc)
        return _page(request, session, offering, exc.status_code, error=shown, url=url, chosen=events)

    session.commit()
    return _page(request, session, offering, 201, created=endpoint, secret=endpoint.secret)


@router.post("/offerings/{offering_id}/webhooks/{endpoint_id}/ping")
def ping(
    request: Request, offering_id: RowId, endpoint_id: RowId, form: CheckedForm, user: WebUser, session: WebSession
) -> Response:
    offering = _offering(session, user, offering_id)
    endpoint = service.get_offering_endpoint(session, offering_id=offering.id, endpoint_id=endpoint_id)
    service.ping(session, endpoint=endpoint)
    session.commit()
    return RedirectResponse(f"/offerings/{offering.id}/webhooks", status_code=303)


@router.post("/offerings/{offering_id}/webhooks/{endpoint_id}/deliveries/{delivery_id}/redeliver")
def redeliver(
    request: Request, offering_id: RowId, endpoint_id: RowId, delivery_id: RowId, form: CheckedForm, user: WebUser,
    session: WebSession,
) -> Response:  # fmt: skip
    offering = _offering(session, user, offering_id)
    endpoint = service.get_offering_endpoint(session, offering_id=offering.id, endpoint_id=endpoint_id)
    service.redeliver(session, endpoint=endpoint, delivery_id=delivery_id)
    session.commit()
    return RedirectResponse(f"/offerings/{offering.id}/webhooks", status_code=303)


@router.post("/offerings/{offering_id}/webhooks/{endpoint_id}/delete")
def delete(
    request: Request, offering_id: RowId, endpoint_id: RowId, form: CheckedForm, user: WebUser, session: WebSession
) -> Response:
    offering = _offering(session, user, offering_id)
    session.delete(service.get_offering_endpoint(session, offering_id=offering.id, endpoint_id=endpoint_id))
    session.commit()
    return RedirectResponse(f"/offerings/{offering.id}/webhooks", status_code=303)
