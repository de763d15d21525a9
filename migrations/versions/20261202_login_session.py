"""login_session: server-side sessions, so that logout and a password change end a copied session cookie

Revision ID: e4f6a8c0b2d4
Revises: c4e6f8a0b2d3
Create Date: 2026-12-02 04:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "e4f6a8c0b2d4"
down_revision: str | None = "c4e6f8a0b2d3"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Cookies signed before this revision carry no session key: their browsers log in again once.
    op.create_table(
        "login_session",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["user_id"], ["user.id"], name=op.f("fk_login_session_user_id_user"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_login_session")),
        sa.UniqueConstraint("key_hash", name=op.f("uq_login_session_key_hash")),
    )
    with op.batch_alter_table("login_session", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_login_session_user_id"), ["user_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("login_session", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_login_session_user_id"))
    op.drop_table("login_session")
