"""invitation links and timed assignments: invitation (one-time set-password links, token stored as SHA-256);
assignment.time_limit_min and assignment_start (each student's clock)

Revision ID: e1a7c0de5e75
Revises: d1a7e3b5c902
Create Date: 2026-12-01 15:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "e1a7c0de5e75"
down_revision: str | None = "d1a7e3b5c902"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "invitation",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("membership_id", sa.Integer(), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("used_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["membership_id"],
            ["membership.id"],
            name=op.f("fk_invitation_membership_id_membership"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_invitation")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_invitation_token_hash")),
    )
    op.create_index(op.f("ix_invitation_membership_id"), "invitation", ["membership_id"], unique=False)
    with op.batch_alter_table("assignment", recreate="never") as batch_op:
        batch_op.add_column(sa.Column("time_limit_min", sa.Integer(), nullable=True))
    op.create_table(
        "assignment_start",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("assignment_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["assignment_id"],
            ["assignment.id"],
            name=op.f("fk_assignment_start_assignment_id_assignment"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["user.id"], name=op.f("fk_assignment_start_user_id_user"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_assignment_start")),
        sa.UniqueConstraint("assignment_id", "user_id", name=op.f("uq_assignment_start_assignment_id")),
    )
    op.create_index(op.f("ix_assignment_start_assignment_id"), "assignment_start", ["assignment_id"], unique=False)
    op.create_index(op.f("ix_assignment_start_user_id"), "assignment_start", ["user_id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_assignment_start_user_id"), table_name="assignment_start")
    op.drop_index(op.f("ix_assignment_start_assignment_id"), table_name="assignment_start")
    op.drop_table("assignment_start")
    # Never a table copy: on SQLite (foreign keys on) dropping the old assignment table would cascade into its
    # submissions. SQLite 3.35+ drops a plain column in place.
    with op.batch_alter_table("assignment", recreate="never") as batch_op:
        batch_op.drop_column("time_limit_min")
    op.drop_index(op.f("ix_invitation_membership_id"), table_name="invitation")
    op.drop_table("invitation")
