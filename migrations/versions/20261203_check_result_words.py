"""check_result.words: a check's feedback as stable codes with parameters (graders.words), which the pages word in
the viewer's language; null for plain text (answer parts, results stored before)

Revision ID: c7e9a1b3d5f8
Revises: f1a3c5e7b9d2
Create Date: 2026-12-03 15:10:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "c7e9a1b3d5f8"
down_revision: str | None = "f1a3c5e7b9d2"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("check_result", schema=None) as batch_op:
        batch_op.add_column(sa.Column("words", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("check_result", schema=None) as batch_op:
        batch_op.drop_column("words")
