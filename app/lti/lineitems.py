"""One AGS line item per resource link, however many processes post scores (`autograder serve` and every
`autograder worker` run a passback sender).

A link launched without an AGS `lineitem` claim gets its line item from us. Before, each sender that found the link
without one created one, and with two processes the platform got two columns for one link (one student's score in
the orphaned one). Now:

1. the link's row in `lti_lineitem` (unique by platform, deployment, context and resource link) is made once
   (an INSERT that ignores a conflict) and holds the line item's URL once it is known;
2. the sender that finds no URL there takes the row's claim (a conditional UPDATE of ``claimed_until``: one
   process wins); the others answer ``Busy`` and try again a moment later, when the URL is there;
3. the claim's holder looks the item up in the platform's line-item container first (by ``resource_link_id``, ours
   preferred by our ``tag``), and creates it only if it is not there, so a holder that died after creating it (its
   claim runs out after ``CLAIM_S``) leaves an item the next holder finds instead of making a second.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, sessionmaker

from app.db import session_scope, utcnow
from app.lti.models import LtiLineItem, LtiResourceLink
from app.lti.services import PlatformClient

TAG = "autograder"  # the tag of the line items this tool makes (AGS `tag`), deep-linked ones included
CLAIM_S = 60  # a holder's time to look up and create (two requests of 10 s at most, and a margin)
WAIT_S = 1.0  # how soon a sender that found the claim taken tries again


class Busy(Exception):
    """Another process is looking up or creating this link's line item now: try again after ``WAIT_S``."""


@dataclass(frozen=True)
class LinkKey:
    """A resource link as the platform knows it."""

    platform_id: int
    deployment_id: str
    context_id: str
    resource_link_id: str


def _row(session: Session, key: LinkKey) -> LtiLineItem:
    values = {"platform_id": key.platform_id, "deployment_id": key.deployment_id, "context_id": key.context_id,
              "resource_link_id": key.resource_link_id, "created_at": utcnow()}  # fmt: skip
    insert = postgresql.insert if session.get_bind().dialect.name == "postgresql" else sqlite.insert
    session.execute(insert(LtiLineItem).values(**values).on_conflict_do_nothing())
    row = session.scalar(
        select(LtiLineItem).where(
            LtiLineItem.platform_id == key.platform_id, LtiLineItem.deployment_id == key.deployment_id,
            LtiLineItem.context_id == key.context_id, LtiLineItem.resource_link_id == key.resource_link_id,
        )
    )  # fmt: skip
    assert row is not None
    return row


def _claim(factory: sessionmaker[Session], key: LinkKey) -> tuple[int, str | None]:
    """(the row's id, the line item URL if it is known); raises Busy when another process holds the claim."""
    with session_scope(factory) as session:
        row = _row(session, key)
        if row.lineitem_url:
            return row.id, row.lineitem_url
        now = utcnow()
        taken = session.execute(
            update(LtiLineItem)
            .where(
                LtiLineItem.id == row.id, LtiLineItem.lineitem_url.is_(None),
                or_(LtiLineItem.claimed_until.is_(None), LtiLineItem.claimed_until < now),
            )
            .values(claimed_until=now + timedelta(seconds=CLAIM_S))
        )  # fmt: skip
        if getattr(taken, "rowcount", 0) != 1:
            session.rollback()
            url = session.scalar(select(LtiLineItem.lineitem_url).where(LtiLineItem.id == row.id))
            if url:
                return row.id, url  # the holder finished between our read and our claim
            raise Busy(f"the line item of resource link {key.resource_link_id!r} is being created by another process")
        return row.id, None


def find(client: PlatformClient, lineitems_url: str, resource_link_id: str) -> str | None:
    """The URL of the link's line item in the platform's container (ours, by tag, first), or None."""
    items = [i for i in client.lineitems(lineitems_url, resource_link_id=resource_link_id) if _for(i, resource_link_id)]
    ours = [i for i in items if i.get("tag") == TAG]
    found = (ours or items)[:1]
    return str(found[0]["id"]) if found else None


def _for(item: dict[str, Any], resource_link_id: str) -> bool:
    # Platforms may ignore the query's filter: the item's own resourceLinkId is what counts.
    return bool(item.get("id")) and str(item.get("resourceLinkId") or "") == resource_link_id


def ensure(
    factory: sessionmaker[Session], client: PlatformClient, key: LinkKey, *, lineitems_url: str, label: str,
    score_maximum: float, link_row_id: int,
) -> str:  # fmt: skip
    """The line item URL of the link ``key``: recorded, found in the container, or created there (by one process
    at a time); recorded on the link's row (``link_row_id``) too. Busy: another process is at it."""
    row_id, url = _claim(factory, key)
    if url is None:
        try:
            url = find(client, lineitems_url, key.resource_link_id) or client.create_lineitem(
                lineitems_url, label=label, score_maximum=score_maximum, resource_link_id=key.resource_link_id,
                tag=TAG,
            )  # fmt: skip
        except BaseException:
            with session_scope(factory) as session:  # the next attempt (ours or another's) may claim at once
                session.execute(update(LtiLineItem).where(LtiLineItem.id == row_id).values(claimed_until=None))
            raise
        with session_scope(factory) as session:
            session.execute(
                update(LtiLineItem).where(LtiLineItem.id == row_id).values(lineitem_url=url, claimed_until=None)
            )
    with session_scope(factory) as session:
        session.execute(
            update(LtiResourceLink)
            .where(LtiResourceLink.id == link_row_id, LtiResourceLink.lineitem_url.is_(None))
            .values(lineitem_url=url)
        )
    return url
