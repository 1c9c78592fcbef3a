"""closed_at: when an inquiry was closed, for a retention counted from closing

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-09

* ``submissions.closed_at``: set when the inquiry's state becomes closed
  (``app.inquiries.triage``), cleared when it is reopened; a form whose
  retention counts from closing (``app.inquiries.retention.Clock.CLOSED``)
  keeps an inquiry while it is NULL. Inquiries already closed take the time
  their triage row last changed, the closest the schema recorded.
* PostgreSQL: a trigram index on ``inbound_messages.body``, so the inbox
  search finds the people's answers as it finds the admins' replies
  (``app.inquiries.search``; SQLite reads that table's text directly).
"""

from alembic import op
import sqlalchemy as sa


revision = '0021'
down_revision = '0020'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('submissions', sa.Column('closed_at', sa.DateTime(timezone=True), nullable=True))
    op.execute(
        "UPDATE submissions SET closed_at = (SELECT changed_at FROM inquiry_triage "
        "WHERE inquiry_triage.inquiry_id = submissions.id AND inquiry_triage.state = 'closed') "
        "WHERE id IN (SELECT inquiry_id FROM inquiry_triage WHERE state = 'closed')"
    )
    if op.get_bind().dialect.name == 'postgresql':
        op.execute("CREATE INDEX ix_inbound_messages_body_trgm ON inbound_messages USING gin (body gin_trgm_ops)")


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS ix_inbound_messages_body_trgm")
    op.drop_column('submissions', 'closed_at')
