"""user_locale: an account's interface language (en, zh_CN), or NULL to follow the browser

Revision ID: b3c5d7e9f1a2
Revises: d2a4c6e8f0b1
Create Date: 2026-12-01 18:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "b3c5d7e9f1a2"
down_revision: str | None = "d2a4c6e8f0b1"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Nullable and without a default: every existing account keeps following its browser (or the switcher's cookie).
    with op.batch_alter_table("user", schema=None) as batch_op:
        batch_op.add_column(sa.Column("locale", sa.String(length=16), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("user", schema=None) as batch_op:
        batch_op.drop_column("locale")
