"""anonymise: a form may anonymise its expired inquiries instead of deleting them

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-10

* ``forms.expiry_action``: what the cleanup does to the form's inquiries past
  their retention, ``delete`` (every form until now) or ``anonymise``
  (``app.cleanup.anonymise``).
* ``submissions.anonymised_at``: when an inquiry was anonymised; NULL for every
  other. The index on the inquiries not anonymised, by folder and age, is the
  one the cleanup's batches follow, so rows already anonymised (which stay,
  past their retention) are never read again.
"""

from alembic import op
import sqlalchemy as sa


revision = '0024'
down_revision = '0023'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        'forms', sa.Column('expiry_action', sa.String(length=16), server_default='delete', nullable=False)
    )
    op.add_column('submissions', sa.Column('anonymised_at', sa.DateTime(timezone=True), nullable=True))
    op.create_index(
        'ix_submissions_not_anonymised',
        'submissions',
        ['status', 'created_at', 'id'],
        sqlite_where=sa.text('anonymised_at IS NULL'),
        postgresql_where=sa.text('anonymised_at IS NULL'),
    )


def downgrade() -> None:
    op.drop_index('ix_submissions_not_anonymised', table_name='submissions')
    op.drop_column('submissions', 'anonymised_at')
    op.drop_column('forms', 'expiry_action')
