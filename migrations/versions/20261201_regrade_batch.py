"""regrade batch: the submissions a bulk regrade requeued, with their scores before, for its progress page

Revision ID: f1e2d3c4b5a6
Revises: a7e3c9d41f02
Create Date: 2026-12-01 15:20:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "f1e2d3c4b5a6"
down_revision: str | None = "a7e3c9d41f02"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "regrade_batch",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("assignment_id", sa.Integer(), nullable=False),
        sa.Column("problem_id", sa.String(length=64), nullable=False),
        sa.Column("created_by_id", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("filters", sa.JSON(), nullable=False),
        sa.Column("before", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["assignment_id"],
            ["assignment.id"],
            name=op.f("fk_regrade_batch_assignment_id_assignment"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["created_by_id"], ["user.id"], name=op.f("fk_regrade_batch_created_by_id_user"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_regrade_batch")),
    )
    op.create_index(op.f("ix_regrade_batch_assignment_id"), "regrade_batch", ["assignment_id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_regrade_batch_assignment_id"), table_name="regrade_batch")
    op.drop_table("regrade_batch")
