"""submission.kind dropped: it kept the problem kind's ``takes`` ("answers" or "code"), which nothing read; the
payload's own key says the same

Revision ID: f1a3c5e7b9d2
Revises: f2b4d6e8a0c3
Create Date: 2026-12-03 07:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "f1a3c5e7b9d2"
down_revision: str | None = "f2b4d6e8a0c3"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("submission", schema=None) as batch_op:
        batch_op.drop_column("kind")


def downgrade() -> None:
    with op.batch_alter_table("submission", schema=None) as batch_op:
        batch_op.add_column(sa.Column("kind", sa.String(length=16), nullable=True))
    # Written back from the payload, which is {"answers": {...}} or {"code": "..."}.
    submission = sa.table(
        "submission", sa.column("id", sa.Integer()), sa.column("payload", sa.JSON()), sa.column("kind", sa.String())
    )
    conn = op.get_bind()
    code = [
        row.id
        for row in conn.execute(sa.select(submission.c.id, submission.c.payload))
        if isinstance(row.payload, dict) and "code" in row.payload
    ]
    conn.execute(submission.update().values(kind="answers"))
    for start in range(0, len(code), 500):
        conn.execute(submission.update().where(submission.c.id.in_(code[start : start + 500])).values(kind="code"))
    with op.batch_alter_table("submission", schema=None) as batch_op:
        batch_op.alter_column("kind", existing_type=sa.String(length=16), nullable=False)
