"""lti_lineitem: one AGS line item per resource link, created once through a unique key and a claim

Revision ID: f2b4d6e8a0c3
Revises: e4f6a8c0b2d4
Create Date: 2026-12-03 07:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "f2b4d6e8a0c3"
down_revision: str | None = "e4f6a8c0b2d4"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "lti_lineitem",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("platform_id", sa.Integer(), nullable=False),
        sa.Column("deployment_id", sa.String(length=255), nullable=False),
        sa.Column("context_id", sa.String(length=255), nullable=False),
        sa.Column("resource_link_id", sa.String(length=255), nullable=False),
        sa.Column("lineitem_url", sa.String(length=2000), nullable=True),
        sa.Column("claimed_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["platform_id"],
            ["lti_platform.id"],
            name=op.f("fk_lti_lineitem_platform_id_lti_platform"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_lti_lineitem")),
        sa.UniqueConstraint(
            "platform_id", "deployment_id", "context_id", "resource_link_id", name=op.f("uq_lti_lineitem_platform_id")
        ),
    )
    with op.batch_alter_table("lti_lineitem", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_lti_lineitem_platform_id"), ["platform_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("lti_lineitem", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_lti_lineitem_platform_id"))
    op.drop_table("lti_lineitem")
