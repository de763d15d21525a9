"""invitation_mailed: when the server mailed an invitation link itself (the one proof of the address)

Revision ID: c7e1a3b5d9f2
Revises: b3c5d7e9f1a2
Create Date: 2026-12-02 04:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "c7e1a3b5d9f2"
down_revision: str | None = "b3c5d7e9f1a2"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Nullable: links issued before were not marked, so they prove nothing (the safe reading of an unknown).
    with op.batch_alter_table("invitation", schema=None) as batch_op:
        batch_op.add_column(sa.Column("mailed_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("invitation", schema=None) as batch_op:
        batch_op.drop_column("mailed_at")
