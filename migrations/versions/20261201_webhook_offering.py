"""webhooks per offering: an endpoint may belong to an offering (its instructors manage it, it gets its events)

Revision ID: a7e3c9d41f02
Revises: c0a11e9e5b1d
Create Date: 2026-12-01 15:30:00

Existing endpoints are personal (offering_id NULL) and keep working unchanged.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "a7e3c9d41f02"
down_revision: str | None = "c0a11e9e5b1d"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("webhook_endpoint", schema=None) as batch_op:
        batch_op.add_column(sa.Column("offering_id", sa.Integer(), nullable=True))
        batch_op.create_foreign_key(
            batch_op.f("fk_webhook_endpoint_offering_id_offering"), "offering", ["offering_id"], ["id"],
            ondelete="CASCADE",
        )  # fmt: skip
        batch_op.create_index(batch_op.f("ix_webhook_endpoint_offering_id"), ["offering_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("webhook_endpoint", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_webhook_endpoint_offering_id"))
        batch_op.drop_constraint(batch_op.f("fk_webhook_endpoint_offering_id_offering"), type_="foreignkey")
        batch_op.drop_column("offering_id")
