"""LTI rows: registered platforms and their deployments, the contexts, users and resource links they launch with,
the short-lived login state (nonces, OIDC state) and the grade passback queue.

An LMS course context maps to one offering, a resource link to one assignment, a platform user (issuer, sub) to
one of our users. Nothing here is keyed by email.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Float, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.db import Base, UTCDateTime, utcnow


class LtiPlatform(Base):
    """One registration of our tool in an LMS: its issuer and the client id it gave us, and its endpoints."""

    __tablename__ = "lti_platform"
    __table_args__ = (UniqueConstraint("issuer", "client_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), default="")
    issuer: Mapped[str] = mapped_column(String(500))
    client_id: Mapped[str] = mapped_column(String(255))
    auth_login_url: Mapped[str] = mapped_column(String(2000))
    auth_token_url: Mapped[str] = mapped_column(String(2000))
    # The audience of our client assertion when it is not the token URL (Moodle and Canvas: the token URL).
    auth_audience: Mapped[str | None] = mapped_column(String(2000), nullable=True)
    keyset_url: Mapped[str] = mapped_column(String(2000))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    deployments: Mapped[list[LtiDeployment]] = relationship(
        back_populates="platform", cascade="all, delete-orphan", order_by="LtiDeployment.id", lazy="selectin"
    )


class LtiDeployment(Base):
    __tablename__ = "lti_deployment"
    __table_args__ = (UniqueConstraint("platform_id", "deployment_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    platform_id: Mapped[int] = mapped_column(ForeignKey("lti_platform.id", ondelete="CASCADE"), index=True)
    deployment_id: Mapped[str] = mapped_column(String(255))

    platform: Mapped[LtiPlatform] = relationship(back_populates="deployments")


class LtiContext(Base):
    """An LMS course (context) and the offering it maps to, with the service URLs its launches carried."""

    __tablename__ = "lti_context"
    __table_args__ = (UniqueConstraint("platform_id", "context_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    platform_id: Mapped[int] = mapped_column(ForeignKey("lti_platform.id", ondelete="CASCADE"), index=True)
    deployment_id: Mapped[str] = mapped_column(String(255))
    context_id: Mapped[str] = mapped_column(String(255))
    offering_id: Mapped[int] = mapped_column(ForeignKey("offering.id", ondelete="CASCADE"), index=True)
    title: Mapped[str] = mapped_column(String(300), default="")
    memberships_url: Mapped[str | None] = mapped_column(String(2000), nullable=True)  # NRPS
    lineitems_url: Mapped[str | None] = mapped_column(String(2000), nullable=True)  # AGS
    ags_scopes: Mapped[list[str]] = mapped_column(JSON, default=list)
    synced_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    platform: Mapped[LtiPlatform] = relationship()


class LtiUser(Base):
    """A platform's user (issuer, sub) linked to one of ours: the only way a launch finds an account."""

    __tablename__ = "lti_user"
    __table_args__ = (UniqueConstraint("issuer", "sub"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    issuer: Mapped[str] = mapped_column(String(500))
    sub: Mapped[str] = mapped_column(String(255))
    user_id: Mapped[int] = mapped_column(ForeignKey("user.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class LtiResourceLink(Base):
    """A placement of the tool in an LMS course: the assignment it opens and the AGS line item it posts to."""

    __tablename__ = "lti_resource_link"
    __table_args__ = (UniqueConstraint("context_id", "resource_link_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    context_id: Mapped[int] = mapped_column(ForeignKey("lti_context.id", ondelete="CASCADE"), index=True)
    resource_link_id: Mapped[str] = mapped_column(String(255))
    assignment_id: Mapped[int] = mapped_column(ForeignKey("assignment.id", ondelete="CASCADE"), index=True)
    lineitem_url: Mapped[str | None] = mapped_column(String(2000), nullable=True)
    title: Mapped[str] = mapped_column(String(300), default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    context: Mapped[LtiContext] = relationship()


class LtiLineItem(Base):
    """The one AGS line item of a resource link, whatever the number of processes posting scores to it
    (app.lti.lineitems): the unique key makes a single row, and the row's claim a single creator.

    ``claimed_until``: a process looking the item up in the platform's container (and creating it there if it is
    not) holds the claim until then; another one waits. A claim that ran out (its process died) is taken over, and
    the taker looks in the container first, so an item created just before the crash is found, not made twice.
    """

    __tablename__ = "lti_lineitem"
    __table_args__ = (UniqueConstraint("platform_id", "deployment_id", "context_id", "resource_link_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    platform_id: Mapped[int] = mapped_column(ForeignKey("lti_platform.id", ondelete="CASCADE"), index=True)
    deployment_id: Mapped[str] = mapped_column(String(255))
    context_id: Mapped[str] = mapped_column(String(255))  # the LMS's context id, as the launches carry it
    resource_link_id: Mapped[str] = mapped_column(String(255))
    lineitem_url: Mapped[str | None] = mapped_column(String(2000), nullable=True)
    claimed_until: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class LtiLaunchState(Base):
    """pylti1p3's launch data storage: OIDC state, nonces (deleted when used) and validated launches, with expiry."""

    __tablename__ = "lti_launch_state"

    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    value: Mapped[Any] = mapped_column(JSON)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)


class LtiPassback(Base):
    """The score of one user at one resource link, as last queued for the platform: one row per pair, updated.

    ``version`` grows with every change; a sent attempt records the version it carried, so a change that lands
    while a post is in flight is posted again (the queue is idempotent: the platform keeps the newest timestamp).
    """

    __tablename__ = "lti_passback"
    __table_args__ = (UniqueConstraint("resource_link_id", "user_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    resource_link_id: Mapped[int] = mapped_column(ForeignKey("lti_resource_link.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("user.id", ondelete="CASCADE"), index=True)
    # pending (waiting for next_attempt_at), sent, failed (retries exhausted; an instructor may retry), held (the
    # release policy hides the score from the student: not posted; next_attempt_at, if set, is when a release by
    # date may open it, and the sender looks again then)
    status: Mapped[str] = mapped_column(String(16), default="pending", index=True)
    score: Mapped[float | None] = mapped_column(Float, nullable=True)
    max_score: Mapped[float] = mapped_column(Float, default=0.0)
    activity_progress: Mapped[str] = mapped_column(String(20), default="Completed")
    grading_progress: Mapped[str] = mapped_column(String(20), default="FullyGraded")
    version: Mapped[int] = mapped_column(Integer, default=1)
    sent_version: Mapped[int] = mapped_column(Integer, default=0)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True, index=True)
    last_status_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)
    changed_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    sent_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class LtiRosterSync(Base):
    """The roster sync an instructor asked for, run by the LTI job (app.lti.sender), one row per offering, updated.

    ``version`` grows with every request; a run records the version it started with, so a request that lands while
    a sync is running makes it run again (the shape of LtiPassback).
    """

    __tablename__ = "lti_roster_sync"

    id: Mapped[int] = mapped_column(primary_key=True)
    offering_id: Mapped[int] = mapped_column(ForeignKey("offering.id", ondelete="CASCADE"), unique=True)
    # pending (due at next_attempt_at), running (claimed until next_attempt_at), done, failed
    status: Mapped[str] = mapped_column(String(16), default="pending", index=True)
    version: Mapped[int] = mapped_column(Integer, default=1)
    requested_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    next_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True, index=True)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    added: Mapped[int] = mapped_column(Integer, default=0)
    updated: Mapped[int] = mapped_column(Integer, default=0)
    dropped: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)
