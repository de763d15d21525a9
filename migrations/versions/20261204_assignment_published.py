"""assignment drafts: assignment.published_at (null: a draft, seen by the offering's staff only); every existing
assignment was visible to its students, so it stays published (as of its creation)

Revision ID: d4f6a8c0e2b4
Revises: b8d0f2a4c6e1
Create Date: 2026-12-04 01:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "d4f6a8c0e2b4"
down_revision: str | None = "b8d0f2a4c6e1"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("assignment", schema=None) as batch_op:
        batch_op.add_column(sa.Column("published_at", sa.DateTime(timezone=True), nullable=True))
    op.execute("UPDATE assignment SET published_at = created_at")


def downgrade() -> None:
    with op.batch_alter_table("assignment", schema=None) as batch_op:
        batch_op.drop_column("published_at")
