"""lti_roster_sync: an instructor's roster sync from the LMS is a queued job with its state (one row per offering)

Revision ID: d2a4c6e8f0b1
Revises: e1a7c0de5e75
Create Date: 2026-12-01 16:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "d2a4c6e8f0b1"
down_revision: str | None = "e1a7c0de5e75"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "lti_roster_sync",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("offering_id", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("requested_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("added", sa.Integer(), nullable=False),
        sa.Column("updated", sa.Integer(), nullable=False),
        sa.Column("dropped", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["offering_id"], ["offering.id"], name=op.f("fk_lti_roster_sync_offering_id_offering"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_lti_roster_sync")),
        sa.UniqueConstraint("offering_id", name=op.f("uq_lti_roster_sync_offering_id")),
    )
    with op.batch_alter_table("lti_roster_sync", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_lti_roster_sync_status"), ["status"], unique=False)
        batch_op.create_index(batch_op.f("ix_lti_roster_sync_next_attempt_at"), ["next_attempt_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("lti_roster_sync", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_lti_roster_sync_next_attempt_at"))
        batch_op.drop_index(batch_op.f("ix_lti_roster_sync_status"))
    op.drop_table("lti_roster_sync")
