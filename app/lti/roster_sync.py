"""Roster sync from the LMS (NRPS): every page of the context's memberships, applied to the offering.

Members are matched by (issuer, user_id = the launch's sub), never by email. Students the LMS no longer lists as
active (absent, Inactive or Deleted) are dropped here; staff are never dropped automatically. The membership
container names a context id of its own, which platforms write differently from the launch's (Canvas, Moodle): it
is not compared; the memberships URL the launch gave for this offering is what ties the roster to it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, sessionmaker

from app.courses.models import MemberRole, Membership, MemberSource, MemberStatus, Offering
from app.courses.permissions import STAFF_ROLES
from app.db import session_scope, utcnow
from app.errors import DomainError
from app.lti.adapters import DatabaseToolConf
from app.lti.models import LtiContext, LtiPlatform, LtiRosterSync, LtiUser
from app.lti.provision import lti_user, upsert_member
from app.lti.roles import map_role
from app.lti.services import PlatformClient, ServiceError

log = logging.getLogger(__name__)
CLAIM_S = 300  # a sync claimed longer ago than this (its process died) is taken over


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


def _linked(session: Session, issuer: str, sub: str) -> bool:
    return session.scalar(select(LtiUser.id).where(LtiUser.issuer == issuer, LtiUser.sub == sub)) is not None


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
        if str(m.get("status") or "Active") != "Active":
            continue  # Inactive or Deleted: no account made for them here; an active row of theirs is dropped below
        role = map_role([str(r) for r in m.get("roles") or []])
        if role is None and not _linked(session, platform.issuer, sub):
            continue  # no role in this course (only institution or system roles) and never here: nothing to add
        user = lti_user(session, issuer=platform.issuer, sub=sub, email=str(m.get("email") or ""),
                        name=str(m.get("name") or ""))  # fmt: skip
        existing = session.scalar(
            select(Membership).where(Membership.offering_id == offering.id, Membership.user_id == user.id)
        )
        if existing is None and role is None:
            continue
        if existing is not None and (existing.source != MemberSource.LTI or role is None):
            role = MemberRole(existing.role)  # a member added here keeps the role given here
        assert role is not None
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


# --- the queued sync an instructor asks for on the LMS page (run by the LTI job, app.lti.sender) -------------------


def queue_sync(session: Session, offering_id: int) -> None:
    """Ask for a roster sync of the offering (due now); asking again while one runs makes it run once more."""
    values = {"offering_id": offering_id, "status": "pending", "version": 0, "requested_at": utcnow(),
              "added": 0, "updated": 0, "dropped": 0}  # fmt: skip
    dialect = session.get_bind().dialect.name
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    session.execute(insert(LtiRosterSync).values(**values).on_conflict_do_nothing(index_elements=["offering_id"]))
    row = session.scalar(select(LtiRosterSync).where(LtiRosterSync.offering_id == offering_id))
    assert row is not None
    row.version += 1
    row.requested_at = utcnow()
    if row.status != "running":  # a running sync sees the new version when it finishes and is due again
        row.status, row.next_attempt_at, row.last_error = "pending", utcnow(), None
    session.flush()


def sync_state(session: Session, offering_id: int) -> LtiRosterSync | None:
    return session.scalar(select(LtiRosterSync).where(LtiRosterSync.offering_id == offering_id))


def run_due_syncs(factory: sessionmaker[Session], tool_conf: DatabaseToolConf, limit: int = 5) -> int:
    """Run the due roster syncs this process can claim (conditional UPDATE); returns how many it ran."""
    now = utcnow()
    with factory() as session:
        due = list(
            session.scalars(
                select(LtiRosterSync.id)
                .where(LtiRosterSync.status.in_(("pending", "running")), LtiRosterSync.next_attempt_at <= now)
                .order_by(LtiRosterSync.next_attempt_at)
                .limit(limit)
            )
        )
    ran = 0
    for row_id in due:
        claimed = _claim(factory, row_id)
        if claimed is not None:
            _run(factory, tool_conf, row_id, *claimed)
            ran += 1
    return ran


def _claim(factory: sessionmaker[Session], row_id: int) -> tuple[int, int] | None:
    """(offering id, version) of a sync this process now runs, or None when another took it."""
    now = utcnow()
    with session_scope(factory) as session:
        result = session.execute(
            update(LtiRosterSync)
            .where(
                LtiRosterSync.id == row_id, LtiRosterSync.next_attempt_at <= now,
                or_(LtiRosterSync.status == "pending", LtiRosterSync.status == "running"),
            )
            .values(status="running", next_attempt_at=now + timedelta(seconds=CLAIM_S))
        )  # fmt: skip
        if getattr(result, "rowcount", 0) != 1:
            return None
        row = session.get(LtiRosterSync, row_id)
        assert row is not None
        return row.offering_id, row.version


def _run(factory: sessionmaker[Session], tool_conf: DatabaseToolConf, row_id: int, offering_id: int,
         version: int) -> None:  # fmt: skip
    error: str | None = None
    result = SyncResult()
    try:
        with session_scope(factory) as session:
            result = sync_offering(session, tool_conf, offering_id)
    except DomainError as exc:
        error = exc.message[:2000]
    except Exception as exc:
        log.exception("LTI roster sync of offering %s failed", offering_id)
        error = f"the sync failed: {type(exc).__name__}"
    with session_scope(factory) as session:
        row = session.get(LtiRosterSync, row_id, with_for_update=True)
        if row is None:
            return  # the offering is gone
        row.finished_at, row.last_error = utcnow(), error
        row.added, row.updated, row.dropped = result.added, result.updated, result.dropped
        if row.version != version:  # asked again while this one ran: once more, now
            row.status, row.next_attempt_at = "pending", utcnow()
        else:
            row.status, row.next_attempt_at = ("failed" if error else "done"), None
