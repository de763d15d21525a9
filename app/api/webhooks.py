"""Webhook endpoints: the caller's own (``/webhooks``) and an offering's (``/offerings/{id}/webhooks``, its
instructors: the WEBHOOKS action). Register (secret shown once), list, delete, delivery log, test ping, redelivery."""

from __future__ import annotations

from fastapi import APIRouter

from app.courses import service as courses
from app.courses.permissions import Action
from app.deps import Principal, PrincipalDep, RowId, SessionDep, SettingsDep
from app.error_format import error_responses
from app.webhooks import service
from app.webhooks.schemas import DeliveryPublic, EndpointCreate, EndpointCreated, EndpointPublic

router = APIRouter(prefix="/webhooks", tags=["webhooks"])
offering_router = APIRouter(
    prefix="/offerings/{offering_id}/webhooks", tags=["webhooks"], responses=error_responses(403, 404)
)


@router.post("", response_model=EndpointCreated, status_code=201)
def create_endpoint(
    body: EndpointCreate, principal: PrincipalDep, session: SessionDep, settings: SettingsDep
) -> EndpointCreated:
    """Register an endpoint for your submissions' events; the `whsec_` secret is in this response only."""
    principal.require("read")
    endpoint = service.create_endpoint(
        session, settings=settings, user=principal.user, token_id=principal.token_id, url=body.url, events=body.events
    )
    session.commit()
    public = EndpointPublic.model_validate(endpoint).model_dump()
    return EndpointCreated.model_validate({**public, "secret": endpoint.secret})


@router.get("", response_model=list[EndpointPublic])
def list_endpoints(principal: PrincipalDep, session: SessionDep) -> list[EndpointPublic]:
    """Your endpoints (never their secrets)."""
    principal.require("read")
    return [EndpointPublic.model_validate(e) for e in service.list_endpoints(session, user=principal.user)]


@router.delete("/{endpoint_id}", status_code=204)
def delete_endpoint(endpoint_id: RowId, principal: PrincipalDep, session: SessionDep) -> None:
    """Delete an endpoint and its delivery log."""
    principal.require("read")
    session.delete(service.get_endpoint(session, user=principal.user, endpoint_id=endpoint_id))
    session.commit()


@router.get("/{endpoint_id}/deliveries", response_model=list[DeliveryPublic])
def list_deliveries(endpoint_id: RowId, principal: PrincipalDep, session: SessionDep) -> list[DeliveryPublic]:
    """The delivery log: each delivery with its attempts (response code, latency), newest first."""
    principal.require("read")
    endpoint = service.get_endpoint(session, user=principal.user, endpoint_id=endpoint_id)
    return [DeliveryPublic.model_validate(d) for d in service.deliveries(session, endpoint=endpoint)]


@router.post("/{endpoint_id}/ping", response_model=DeliveryPublic, status_code=202)
def ping(endpoint_id: RowId, principal: PrincipalDep, session: SessionDep) -> DeliveryPublic:
    """Queue a `webhook.ping` event to this endpoint (sent by a worker, like every delivery)."""
    principal.require("read")
    endpoint = service.get_endpoint(session, user=principal.user, endpoint_id=endpoint_id)
    delivery = service.ping(session, endpoint=endpoint)
    session.commit()
    return DeliveryPublic.model_validate(delivery)


@router.post("/{endpoint_id}/deliveries/{delivery_id}/redeliver", response_model=DeliveryPublic, status_code=202)
def redeliver(endpoint_id: RowId, delivery_id: RowId, principal: PrincipalDep, session: SessionDep) -> DeliveryPublic:
    """Send a past delivery again: same webhook-id and body, a fresh retry schedule."""
    principal.require("read")
    endpoint = service.get_endpoint(session, user=principal.user, endpoint_id=endpoint_id)
    delivery = service.redeliver(session, endpoint=endpoint, delivery_id=delivery_id)
    session.commit()
    return DeliveryPublic.model_validate(delivery)


# --- an offering's endpoints ---------------------------------------------------------------------------------------


def _managed(session: SessionDep, principal: Principal, offering_id: int) -> int:
    """The offering, if the caller may manage its webhooks (404 without a role there, 403 with another role)."""
    principal.require("instructor")
    return courses.get_offering(session, principal.access, offering_id, Action.WEBHOOKS).id


@offering_router.post("", response_model=EndpointCreated, status_code=201)
def create_offering_endpoint(
    offering_id: RowId, body: EndpointCreate, principal: PrincipalDep, session: SessionDep, settings: SettingsDep
) -> EndpointCreated:
    """Register an endpoint for every submission event of this offering (instructors); the `whsec_` secret is in
    this response only. Bodies are what you see at GET /submissions/{id}."""
    oid = _managed(session, principal, offering_id)
    endpoint = service.create_endpoint(
        session, settings=settings, user=principal.user, token_id=None, url=body.url, events=body.events,
        offering_id=oid,
    )  # fmt: skip
    session.commit()
    public = EndpointPublic.model_validate(endpoint).model_dump()
    return EndpointCreated.model_validate({**public, "secret": endpoint.secret})


@offering_router.get("", response_model=list[EndpointPublic])
def list_offering_endpoints(offering_id: RowId, principal: PrincipalDep, session: SessionDep) -> list[EndpointPublic]:
    """The offering's endpoints (never their secrets)."""
    oid = _managed(session, principal, offering_id)
    return [EndpointPublic.model_validate(e) for e in service.list_offering_endpoints(session, offering_id=oid)]


@offering_router.delete("/{endpoint_id}", status_code=204)
def delete_offering_endpoint(
    offering_id: RowId, endpoint_id: RowId, principal: PrincipalDep, session: SessionDep
) -> None:
    """Delete one of the offering's endpoints and its delivery log."""
    oid = _managed(session, principal, offering_id)
    session.delete(service.get_offering_endpoint(session, offering_id=oid, endpoint_id=endpoint_id))
    session.commit()


@offering_router.get("/{endpoint_id}/deliveries", response_model=list[DeliveryPublic])
def list_offering_deliveries(
    offering_id: RowId, endpoint_id: RowId, principal: PrincipalDep, session: SessionDep
) -> list[DeliveryPublic]:
    """The endpoint's delivery log: each delivery with its attempts (response code, latency), newest first."""
    oid = _managed(session, principal, offering_id)
    endpoint = service.get_offering_endpoint(session, offering_id=oid, endpoint_id=endpoint_id)
    return [DeliveryPublic.model_validate(d) for d in service.deliveries(session, endpoint=endpoint)]


@offering_router.post("/{endpoint_id}/ping", response_model=DeliveryPublic, status_code=202)
def ping_offering_endpoint(
    offering_id: RowId, endpoint_id: RowId, principal: PrincipalDep, session: SessionDep
) -> DeliveryPublic:
    """Queue a `webhook.ping` event to this endpoint."""
    oid = _managed(session, principal, offering_id)
    endpoint = service.get_offering_endpoint(session, offering_id=oid, endpoint_id=endpoint_id)
    delivery = service.ping(session, endpoint=endpoint)
    session.commit()
    return DeliveryPublic.model_validate(delivery)


@offering_router.post(
    "/{endpoint_id}/deliveries/{delivery_id}/redeliver", response_model=DeliveryPublic, status_code=202
)
def redeliver_offering(
    offering_id: RowId, endpoint_id: RowId, delivery_id: RowId, principal: PrincipalDep, session: SessionDep
) -> DeliveryPublic:
    """Send a past delivery again: same webhook-id and body, a fresh retry schedule."""
    oid = _managed(session, principal, offering_id)
    endpoint = service.get_offering_endpoint(session, offering_id=oid, endpoint_id=endpoint_id)
    delivery = service.redeliver(session, endpoint=endpoint, delivery_id=delivery_id)
    session.commit()
    return DeliveryPublic.model_validate(delivery)
