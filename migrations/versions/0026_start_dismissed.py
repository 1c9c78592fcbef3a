"""start dismissed: when an owner put away the Overview's getting-started checklist

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-07

* ``admins.start_dismissed_at``: set when the admin dismisses the
  checklist on the Overview (``app.admin.start``), cleared when they bring
  it back; NULL shows it. Each admin's own choice, so one owner putting it
  away does not hide it from another. Every admin from before starts with
  it shown.
"""

from alembic import op
import sqlalchemy as sa


revision = '0026'
down_revision = '0025'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('admins', sa.Column('start_dismissed_at', sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    op.drop_column('admins', 'start_dismissed_at')
