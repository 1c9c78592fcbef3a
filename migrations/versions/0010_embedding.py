"""embedding: the origins each form accepts, its thank-you address, and each inquiry's origin

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-04

Three nullable columns, added in place: no form accepts another site
until an admin lists one, and every stored inquiry came from Sundown's own
pages (``origin`` NULL).
"""

from alembic import op
import sqlalchemy as sa


revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('forms', sa.Column('allowed_origins', sa.JSON(), nullable=True))
    op.add_column('forms', sa.Column('thanks_url', sa.String(length=500), nullable=True))
    op.add_column('submissions', sa.Column('origin', sa.String(length=200), nullable=True))


def downgrade() -> None:
    op.drop_column('submissions', 'origin')
    op.drop_column('forms', 'thanks_url')
    op.drop_column('forms', 'allowed_origins')
