"""Roster sync from the LMS (NRPS): every page of the context's memberships, applied to the offering.

Members are matched by (issuer, user_id = the launch's sub), never by email. Students the LMS no longer lists as
active (absent, Inactive or Deleted) are dropped here; staff are never dropped automatically. The membership
container names a context id of its own, which platforms write differently from the launch's (Canvas, Moodle): it
is not compared; the memberships URL the launch gave for this offering is what ties the roster to it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.courses.models import MemberRole, Membership, MemberSource, MemberStatus, Offering
from app.courses.permissions import STAFF_ROLES
from app.db import session_scope, utcnow
from app.errors import DomainError
from app.lti.adapters import DatabaseToolConf
from app.lti.models import LtiContext, LtiPlatform, LtiUser
from app.lti.provision import lti_user, map_role, upsert_member
from app.lti.services import PlatformClient, ServiceError

log = logging.getLogger(__name__)


@dataclass
class SyncResult:
    added: int = 0
    updated: int = 0
    dropped: int = 0


class SyncFailed(DomainError):
    status_code = 502
    type = "lti_roster_sync_failed"


def contexts_of(session: Session, offering_id: int) -> list[LtiContext]:
    return list(
        session.scalars(select(LtiContext).where(LtiContext.offering_id == offering_id).order_by(LtiContext.id))
    )


def apply_members(
    session: Session, ctx: LtiContext, platform: LtiPlatform, members: list[dict[str, Any]]
) -> SyncResult:
    """Apply one context's full member list to its offering (one transaction: the caller commits)."""
    offering = session.get(Offering, ctx.offering_id)
    assert offering is not None
    result = SyncResult()
    active: set[int] = set()
    for m in members:
        sub = str(m.get("user_id") or "")
        if not sub:
            continue
        status = str(m.get("status") or "Active")
        user = lti_user(session, issuer=platform.issuer, sub=sub, email=str(m.get("email") or ""),
                        name=str(m.get("name") or ""))  # fmt: skip
        existing = session.scalar(
            select(Membership).where(Membership.offering_id == offering.id, Membership.user_id == user.id)
        )
        if status != "Active":
            continue  # dropped below (if a student)
        role = map_role([str(r) for r in m.get("roles") or []])
        if existing is not None and existing.source != MemberSource.LTI:
            role = MemberRole(existing.role)  # a member added here keeps the role given here
        before = (existing.role, existing.status, existing.name) if existing is not None else None
        member = upsert_member(session, offering=offering, user=user, role=role, name=str(m.get("name") or ""),
                               lis_id=str(m.get("lis_person_sourcedid") or ""))  # fmt: skip
        active.add(user.id)
        if before is None:
            result.added += 1
        elif before != (member.role, member.status, member.name):
            result.updated += 1
    if not active:
        # An empty roster is far likelier a platform's hiccup than a course everyone left: nobody is dropped.
        log.warning("LTI roster of offering %s came back without active members; nothing dropped", offering.id)
        ctx.synced_at = utcnow()
        return result
    # Everyone this platform provisioned into the offering who is not an active member any more.
    linked = select(LtiUser.user_id).where(LtiUser.issuer == platform.issuer)
    for member in session.scalars(
        select(Membership).where(
            Membership.offering_id == offering.id, Membership.user_id.in_(linked),
            Membership.status == MemberStatus.ACTIVE,
        )
    ):  # fmt: skip
        if member.user_id in active or MemberRole(member.role) in STAFF_ROLES:
            continue
        member.status = MemberStatus.DROPPED
        result.dropped += 1
    ctx.synced_at = utcnow()
    session.flush()
    return result


def sync_offering(session: Session, tool_conf: DatabaseToolConf, offering_id: int) -> SyncResult:
    """Fetch and apply the roster of every LMS context linked to the offering."""
    total = SyncResult()
    for ctx in contexts_of(session, offering_id):
        if not ctx.memberships_url:
            continue
        platform = session.get(LtiPlatform, ctx.platform_id)
        assert platform is not None
        client = PlatformClient(platform, tool_conf)
        try:
            members = client.members(ctx.memberships_url)
        except ServiceError as exc:
            log.warning("LTI roster sync of offering %s failed: %s", offering_id, exc)
            raise SyncFailed(f"the LMS did not give the roster: {exc}") from exc
        finally:
            client.close()
        got = apply_members(session, ctx, platform, members)
        total.added, total.updated, total.dropped = (
            total.added + got.added, total.updated + got.updated, total.dropped + got.dropped,
        )  # fmt: skip
    log.info("LTI roster sync of offering %s: %s", offering_id, total,
             extra={"fields": {"event": "lti_roster_sync", "offering_id": offering_id}})  # fmt: skip
    return total


def sync_in_background(factory: sessionmaker[Session], tool_conf: DatabaseToolConf, offering_id: int) -> None:
    """After an instructor's launch (a background task after the response): failures are logged, not raised."""
    try:
        with session_scope(factory) as session:
            sync_offering(session, tool_conf, offering_id)
    except Exception as exc:
        log.warning("LTI roster sync after a launch failed: %s: %s", type(exc).__name__, exc)
