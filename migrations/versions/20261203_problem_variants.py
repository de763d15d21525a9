"""problem variants: submission.variant_seed (the variant a submission answered), problem_variant (each
generated variant, cached per version, problem and seed) and assignment.new_variant_after

Revision ID: a7c9e1b3d5f2
Revises: c7e9a1b3d5f8
Create Date: 2026-12-03 15:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "a7c9e1b3d5f2"
down_revision: str | None = "c7e9a1b3d5f8"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("submission", schema=None) as batch_op:
        batch_op.add_column(sa.Column("variant_seed", sa.BigInteger(), nullable=True))
    with op.batch_alter_table("assignment", schema=None) as batch_op:
        batch_op.add_column(sa.Column("new_variant_after", sa.Integer(), nullable=True))
    op.create_table(
        "problem_variant",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("problem_set_version_id", sa.Integer(), nullable=False),
        sa.Column("problem_id", sa.String(length=64), nullable=False),
        sa.Column("seed", sa.BigInteger(), nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["problem_set_version_id"],
            ["problem_set_version.id"],
            name=op.f("fk_problem_variant_problem_set_version_id_problem_set_version"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_problem_variant")),
        sa.UniqueConstraint(
            "problem_set_version_id", "problem_id", "seed", name=op.f("uq_problem_variant_problem_set_version_id")
        ),
    )
    with op.batch_alter_table("problem_variant", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_problem_variant_problem_set_version_id"), ["problem_set_version_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("problem_variant", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_problem_variant_problem_set_version_id"))
    op.drop_table("problem_variant")
    with op.batch_alter_table("assignment", schema=None) as batch_op:
        batch_op.drop_column("new_variant_after")
    with op.batch_alter_table("submission", schema=None) as batch_op:
        batch_op.drop_column("variant_seed")
