"""admin locale: each admin's language for the admin pages

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-03

A nullable column: existing admins get None, which means "the browser's
language" (Accept-Language), so nothing changes for them until they choose.
"""

from alembic import op
import sqlalchemy as sa


revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('admins', schema=None) as batch_op:
        batch_op.add_column(sa.Column('locale', sa.String(length=16), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('admins', schema=None) as batch_op:
        batch_op.drop_column('locale')
