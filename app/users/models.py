"""Users and their API tokens (stored hashed)."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from sqlalchemy import JSON, Boolean, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.db import Base, UTCDateTime, utcnow


class GlobalRole(StrEnum):
    """The only global role is admin (create courses, manage users); everything else is per offering."""

    USER = "user"
    ADMIN = "admin"


class Role(StrEnum):
    """The role a new account gets: admin, or this course role in the default offering (app.courses)."""

    STUDENT = "student"
    TA = "ta"
    INSTRUCTOR = "instructor"
    OBSERVER = "observer"
    ADMIN = "admin"


# The interface languages an account may choose (app.web.i18n names each and holds its catalog). An account's
# ``locale`` is one of these, or None: follow the browser (the switcher's cookie, else Accept-Language).
LOCALES = ("en", "zh_CN")


class User(Base):
    __tablename__ = "user"

    id: Mapped[int] = mapped_column(primary_key=True)
    email: Mapped[str] = mapped_column(String(254), unique=True)
    display_name: Mapped[str] = mapped_column(String(200), default="")
    role: Mapped[str] = mapped_column(String(20), default=GlobalRole.USER)
    password_hash: Mapped[str] = mapped_column(String(255))
    is_active: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    locale: Mapped[str | None] = mapped_column(String(16), nullable=True, default=None)

    tokens: Mapped[list[ApiToken]] = relationship(back_populates="user")

    @property
    def is_admin(self) -> bool:
        return self.role == GlobalRole.ADMIN


class ApiToken(Base):
    __tablename__ = "api_token"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("user.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(100))
    # The first characters of the token, shown in listings so a user can tell tokens apart; not a secret.
    prefix: Mapped[str] = mapped_column(String(16))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    scopes: Mapped[list[str]] = mapped_column(JSON, default=list)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # Narrowed to one offering: the token acts only there, whatever else its user is a member of.
    offering_id: Mapped[int | None] = mapped_column(ForeignKey("offering.id", ondelete="CASCADE"), nullable=True)

    user: Mapped[User] = relationship(back_populates="tokens")


class LoginSession(Base):
    """A logged-in browser: the session cookie carries a random key, only its SHA-256 is kept here.

    The row, not the cookie, decides whether the session still works: logging out revokes this one, a password
    change every other one of the account, so a copied cookie stops working then (a signed cookie alone cannot be
    taken back). ``expires_at`` is the idle limit: each use (to the minute) moves it on by the session's lifetime.
    """

    __tablename__ = "login_session"

    id: Mapped[int] = mapped_column(primary_key=True)
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("user.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    last_seen_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)

    user: Mapped[User] = relationship()


class Invitation(Base):
    """A one-time link that activates one invited roster row: it sets the password of a new account, or an
    existing account of the row's email accepts the offering with it.

    Only the SHA-256 of the link's token is stored; the plain token is shown or mailed once. A new invitation for
    the same member replaces the old one; a used or expired one opens nothing.
    """

    __tablename__ = "invitation"

    id: Mapped[int] = mapped_column(primary_key=True)
    membership_id: Mapped[int] = mapped_column(ForeignKey("membership.id", ondelete="CASCADE"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    used_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # Set once the server mailed the link itself: only then does using it prove the address (a link handed to the
    # instructor to pass on proves nothing), and only then may the account take other offerings' pending rows.
    mailed_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
