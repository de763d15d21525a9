"""rate limit counter: the database limiter's fixed-window counts (used when no Redis broker is configured)

Revision ID: 5c4f0acb010b
Revises: f3456932dde2
Create Date: 2026-12-01 12:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "5c4f0acb010b"
down_revision: str | None = "f3456932dde2"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "rate_limit_counter",
        sa.Column("bucket", sa.String(length=200), nullable=False),
        sa.Column("window_start", sa.BigInteger(), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("bucket", name=op.f("pk_rate_limit_counter")),
    )


def downgrade() -> None:
    op.drop_table("rate_limit_counter")
