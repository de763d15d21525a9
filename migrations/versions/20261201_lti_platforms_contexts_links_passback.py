"""lti: platforms, deployments, contexts, users by (issuer, sub), resource links, launch state, grade passback

Revision ID: d1a7e3b5c902
Revises: f1e2d3c4b5a6
Create Date: 2026-12-01 15:15:42.340189
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "d1a7e3b5c902"
down_revision: str | None = "f1e2d3c4b5a6"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "lti_launch_state",
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("value", sa.JSON(), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_lti_launch_state")),
    )
    with op.batch_alter_table("lti_launch_state", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_lti_launch_state_expires_at"), ["expires_at"], unique=False)

    op.create_table(
        "lti_platform",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("issuer", sa.String(length=500), nullable=False),
        sa.Column("client_id", sa.String(length=255), nullable=False),
        sa.Column("auth_login_url", sa.String(length=2000), nullable=False),
        sa.Column("auth_token_url", sa.String(length=2000), nullable=False),
        sa.Column("auth_audience", sa.String(length=2000), nullable=True),
        sa.Column("keyset_url", sa.String(length=2000), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_lti_platform")),
        sa.UniqueConstraint("issuer", "client_id", name=op.f("uq_lti_platform_issuer")),
    )
    op.create_table(
        "lti_deployment",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("platform_id", sa.Integer(), nullable=False),
        sa.Column("deployment_id", sa.String(length=255), nullable=False),
        sa.ForeignKeyConstraint(
            ["platform_id"],
            ["lti_platform.id"],
            name=op.f("fk_lti_deployment_platform_id_lti_platform"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_lti_deployment")),
        sa.UniqueConstraint("platform_id", "deployment_id", name=op.f("uq_lti_deployment_platform_id")),
    )
    with op.batch_alter_table("lti_deployment", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_lti_deployment_platform_id"), ["platform_id"], unique=False)

    op.create_table(
        "lti_user",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("issuer", sa.String(length=500), nullable=False),
        sa.Column("sub", sa.String(length=255), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["user.id"], name=op.f("fk_lti_user_user_id_user"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_lti_user")),
        sa.UniqueConstraint("issuer", "sub", name=op.f("uq_lti_user_issuer")),
    )
    with op.batch_alter_table("lti_user", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_lti_user_user_id"), ["user_id"], unique=False)

    op.create_table(
        "lti_context",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("platform_id", sa.Integer(), nullable=False),
        sa.Column("deployment_id", sa.String(length=255), nullable=False),
        sa.Column("context_id", sa.String(length=255), nullable=False),
        sa.Column("offering_id", sa.Integer(), nullable=False),
        sa.Column("title", sa.String(length=300), nullable=False),
        sa.Column("memberships_url", sa.String(length=2000), nullable=True),
        sa.Column("lineitems_url", sa.String(length=2000), nullable=True),
        sa.Column("ags_scopes", sa.JSON(), nullable=False),
        sa.Column("synced_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["offering_id"], ["offering.id"], name=op.f("fk_lti_context_offering_id_offering"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["platform_id"],
            ["lti_platform.id"],
            name=op.f("fk_lti_context_platform_id_lti_platform"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_lti_context")),
        sa.UniqueConstraint("platform_id", "context_id", name=op.f("uq_lti_context_platform_id")),
    )
    with op.batch_alter_table("lti_context", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_lti_context_offering_id"), ["offering_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_lti_context_platform_id"), ["platform_id"], unique=False)

    op.create_table(
        "lti_resource_link",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("context_id", sa.Integer(), nullable=False),
        sa.Column("resource_link_id", sa.String(length=255), nullable=False),
        sa.Column("assignment_id", sa.Integer(), nullable=False),
        sa.Column("lineitem_url", sa.String(length=2000), nullable=True),
        sa.Column("title", sa.String(length=300), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["assignment_id"],
            ["assignment.id"],
            name=op.f("fk_lti_resource_link_assignment_id_assignment"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["context_id"],
            ["lti_context.id"],
            name=op.f("fk_lti_resource_link_context_id_lti_context"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_lti_resource_link")),
        sa.UniqueConstraint("context_id", "resource_link_id", name=op.f("uq_lti_resource_link_context_id")),
    )
    with op.batch_alter_table("lti_resource_link", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_lti_resource_link_assignment_id"), ["assignment_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_lti_resource_link_context_id"), ["context_id"], unique=False)

    op.create_table(
        "lti_passback",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("resource_link_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("max_score", sa.Float(), nullable=False),
        sa.Column("activity_progress", sa.String(length=20), nullable=False),
        sa.Column("grading_progress", sa.String(length=20), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("sent_version", sa.Integer(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_status_code", sa.Integer(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("changed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("sent_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["resource_link_id"],
            ["lti_resource_link.id"],
            name=op.f("fk_lti_passback_resource_link_id_lti_resource_link"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["user.id"], name=op.f("fk_lti_passback_user_id_user"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_lti_passback")),
        sa.UniqueConstraint("resource_link_id", "user_id", name=op.f("uq_lti_passback_resource_link_id")),
    )
    with op.batch_alter_table("lti_passback", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_lti_passback_next_attempt_at"), ["next_attempt_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_lti_passback_resource_link_id"), ["resource_link_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_lti_passback_status"), ["status"], unique=False)
        batch_op.create_index(batch_op.f("ix_lti_passback_user_id"), ["user_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("lti_passback", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_lti_passback_user_id"))
        batch_op.drop_index(batch_op.f("ix_lti_passback_status"))
        batch_op.drop_index(batch_op.f("ix_lti_passback_resource_link_id"))
        batch_op.drop_index(batch_op.f("ix_lti_passback_next_attempt_at"))

    op.drop_table("lti_passback")
    with op.batch_alter_table("lti_resource_link", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_lti_resource_link_context_id"))
        batch_op.drop_index(batch_op.f("ix_lti_resource_link_assignment_id"))

    op.drop_table("lti_resource_link")
    with op.batch_alter_table("lti_context", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_lti_context_platform_id"))
        batch_op.drop_index(batch_op.f("ix_lti_context_offering_id"))

    op.drop_table("lti_context")
    with op.batch_alter_table("lti_user", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_lti_user_user_id"))

    op.drop_table("lti_user")
    with op.batch_alter_table("lti_deployment", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_lti_deployment_platform_id"))

    op.drop_table("lti_deployment")
    op.drop_table("lti_platform")
    with op.batch_alter_table("lti_launch_state", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_lti_launch_state_expires_at"))

    op.drop_table("lti_launch_state")
