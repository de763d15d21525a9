"""Who may do what where: a caller's active memberships, resolved once per request, checked against the matrix."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from app.courses.models import MemberRole, Membership, MemberStatus, Offering
from app.courses.permissions import STAFF_ROLES, Action, allowed
from app.errors import N_, Forbidden, NotFound
from app.users.models import User


@dataclass(frozen=True)
class Access:
    """A caller's roles by offering id (active memberships only: invited and dropped give nothing).

    ``staff_scope`` is False for a token without the 'instructor' scope: staff then act as students. ``only`` is
    the one offering a narrowed token may reach.
    """

    user_id: int
    is_admin: bool
    roles: Mapping[int, MemberRole]
    staff_scope: bool = True
    only: int | None = None
    ta_can_override: frozenset[int] = field(default_factory=frozenset)

    def role_in(self, offering_id: int | None) -> MemberRole | None:
        if offering_id is None or (self.only is not None and offering_id != self.only):
            return None
        role = self.roles.get(offering_id)
        if role in STAFF_ROLES and not self.staff_scope:
            return MemberRole.STUDENT
        return role

    def can(self, offering_id: int | None, action: Action) -> bool:
        return allowed(self.role_in(offering_id), action, ta_can_override=offering_id in self.ta_can_override)

    def require(self, offering_id: int | None, action: Action, missing: str) -> MemberRole:
        """The caller's role, if it allows ``action``; else 404 (no role: nothing there to see) or 403."""
        role = self.role_in(offering_id)
        if role is None:
            raise NotFound(missing)
        if not self.can(offering_id, action):
            raise Forbidden(N_("your role in this offering (%(role)s) does not allow this (%(action)s)"),
                            params={"role": role, "action": action})  # fmt: skip

        return role

    def offerings(self, action: Action) -> set[int]:
        """The offerings where the caller may do ``action``."""
        return {oid for oid in self.roles if self.can(oid, action)}

    @property
    def any_staff(self) -> bool:
        return any(self.can(oid, Action.VIEW_UNRELEASED) for oid in self.roles)

    @property
    def any_gradebook(self) -> bool:
        """Reads some offering's gradebook: staff, and observers (who read nothing else of it)."""
        return any(self.can(oid, Action.GRADEBOOK) for oid in self.roles)


# Built once: every request asks.
_ROLES = (
    select(Membership.offering_id, Membership.role, Offering.ta_can_override)
    .join(Offering, Offering.id == Membership.offering_id)
    .where(Membership.user_id == bindparam("user_id"), Membership.status == MemberStatus.ACTIVE)
)


def access_for(session: Session, user: User, *, staff_scope: bool = True, only_offering: int | None = None) -> Access:
    """Build the caller's Access. Admins are instructors of every offering."""
    # One narrow query per request: the user's active memberships with their offering's TA flag (an admin: every
    # offering's). A flag matters only where the caller has a role, so a member needs no other offering's.
    if user.is_admin:
        ta_flags = {r.id: r.ta_can_override for r in session.execute(select(Offering.id, Offering.ta_can_override))}
        roles = dict.fromkeys(ta_flags, MemberRole.INSTRUCTOR)
    else:
        rows = session.execute(_ROLES, {"user_id": user.id}).all()
        roles = {r.offering_id: MemberRole(r.role) for r in rows}
        ta_flags = {r.offering_id: r.ta_can_override for r in rows}
    return Access(
        user_id=user.id,
        is_admin=user.is_admin,
        roles=roles,
        staff_scope=staff_scope,
        only=only_offering,
        ta_can_override=frozenset(oid for oid, flag in ta_flags.items() if flag),
    )


def operator_access(session: Session) -> Access:
    """The command line runs on the server with the database's credentials: it acts as an admin."""
    ids = list(session.scalars(select(Offering.id)))
    return Access(user_id=0, is_admin=True, roles=dict.fromkeys(ids, MemberRole.INSTRUCTOR))
