"""`autograder webhooks`: an offering's webhook endpoints from the server's shell (as admin): register one for an
instructor of the offering (its secret printed once), list them, their delivery log, redeliver, ping, delete."""

from __future__ import annotations

from typing import Annotated

import typer
from sqlalchemy import select

from app.cli.common import admin_session, settings_or_exit
from app.courses import service as courses
from app.courses.access import access_for, operator_access
from app.courses.permissions import Action
from app.errors import Forbidden, NotFound
from app.users.models import User
from app.webhooks import service
from app.webhooks.service import EVENTS

webhooks_app = typer.Typer(help="An offering's webhook endpoints.", no_args_is_help=True)


@webhooks_app.command("add")
def add(
    offering: Annotated[int, typer.Argument(help="the offering id")],
    url: Annotated[str, typer.Argument(help="where to POST the signed events")],
    owner: Annotated[str, typer.Option("--owner", help="email of an instructor of the offering: it acts as them")],
    event: Annotated[
        list[str] | None, typer.Option("--event", help=f"repeatable; default every event: {', '.join(EVENTS)}")
    ] = None,
) -> None:
    """Register an endpoint for the offering's submission events; prints its whsec_ secret once."""
    settings = settings_or_exit()
    with admin_session(settings) as session:
        target = courses.get_offering(session, operator_access(session), offering)
        user = session.scalar(select(User).where(User.email == owner.strip().lower()))
        if user is None:
            raise NotFound(f"no user {owner!r}", field="owner")
        if not access_for(session, user).can(target.id, Action.WEBHOOKS):
            raise Forbidden(f"{user.email} is not an instructor of offering {target.id}")
        endpoint = service.create_endpoint(
            session, settings=settings, user=user, token_id=None, url=url, events=list(event or EVENTS),
            offering_id=target.id,
        )  # fmt: skip
        session.commit()
        typer.echo(f"endpoint {endpoint.id} for offering {target.id}: {', '.join(endpoint.events)}")
        typer.echo(f"secret (shown only now): {endpoint.secret}")


@webhooks_app.command("list")
def list_endpoints(offering: Annotated[int, typer.Argument(help="the offering id")]) -> None:
    """The offering's endpoints (never their secrets)."""
    with admin_session() as session:
        target = courses.get_offering(session, operator_access(session), offering)
        for e in service.list_offering_endpoints(session, offering_id=target.id):
            state = "active" if e.is_active else f"disabled ({e.disabled_reason})"
            typer.echo(f"{e.id} {e.url} [{', '.join(e.events)}] {state}")


@webhooks_app.command("deliveries")
def deliveries(
    offering: Annotated[int, typer.Argument(help="the offering id")],
    endpoint: Annotated[int, typer.Argument(help="the endpoint id")],
) -> None:
    """An endpoint's delivery log, newest first: each attempt's response code and latency."""
    with admin_session() as session:
        found = service.get_offering_endpoint(session, offering_id=offering, endpoint_id=endpoint)
        for d in service.deliveries(session, endpoint=found):
            tries = ", ".join(
                f"{a.status_code or a.error or 'no answer'} ({a.latency_ms:.0f} ms)" for a in d.attempt_log
            )
            typer.echo(f"{d.id} {d.event_type} submission={d.submission_id} {d.status} {d.message_id}: {tries}")


@webhooks_app.command("redeliver")
def redeliver(
    offering: Annotated[int, typer.Argument(help="the offering id")],
    endpoint: Annotated[int, typer.Argument(help="the endpoint id")],
    delivery: Annotated[int, typer.Argument(help="the delivery id (from `deliveries`)")],
) -> None:
    """Queue a past delivery again: the same webhook-id and body, a fresh retry schedule."""
    with admin_session() as session:
        found = service.get_offering_endpoint(session, offering_id=offering, endpoint_id=endpoint)
        again = service.redeliver(session, endpoint=found, delivery_id=delivery)
        session.commit()
        typer.echo(f"queued delivery {again.id} ({again.message_id})")


@webhooks_app.command("ping")
def ping(
    offering: Annotated[int, typer.Argument(help="the offering id")],
    endpoint: Annotated[int, typer.Argument(help="the endpoint id")],
) -> None:
    """Queue a webhook.ping event to the endpoint."""
    with admin_session() as session:
        found = service.get_offering_endpoint(session, offering_id=offering, endpoint_id=endpoint)
        queued = service.ping(session, endpoint=found)
        session.commit()
        typer.echo(f"queued delivery {queued.id} ({queued.message_id})")


@webhooks_app.command("delete")
def delete(
    offering: Annotated[int, typer.Argument(help="the offering id")],
    endpoint: Annotated[int, typer.Argument(help="the endpoint id")],
) -> None:
    """Delete an endpoint and its delivery log."""
    with admin_session() as session:
        session.delete(service.get_offering_endpoint(session, offering_id=offering, endpoint_id=endpoint))
        session.commit()
        typer.echo(f"deleted endpoint {endpoint}")
