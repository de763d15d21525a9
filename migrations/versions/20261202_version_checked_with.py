"""version_checked_with: the checking code a version's gate report was made with

Revision ID: c4e6f8a0b2d3
Revises: c7e1a3b5d9f2
Create Date: 2026-12-02 04:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "c4e6f8a0b2d3"
down_revision: str | None = "c7e1a3b5d9f2"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # NULL for every existing version: nobody knows which checking code passed it, so `serve` checks each live
    # one again in the background (it stays live meanwhile) and records the current one.
    with op.batch_alter_table("problem_set_version", schema=None) as batch_op:
        batch_op.add_column(sa.Column("checked_with", sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("problem_set_version", schema=None) as batch_op:
        batch_op.drop_column("checked_with")
