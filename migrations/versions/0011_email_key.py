"""email key: a person's address case folded once, in Python, for People, erasure and re-apply

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-04

The People page and erasures compared ``lower(email)`` with the database's
``lower()``, which on SQLite folds ASCII letters only: ``Ärger@example.com``
and ``ÄRGER@example.com`` were two people there, and an erasure of one kept
the other. Each inquiry now stores ``email_key``, the normalised address
folded by Python's ``str.lower`` (as the erasure records' hashes are), filled
here for the stored rows in batches by id, and indexed; the expression index
on ``lower(email)`` goes.
"""

from alembic import op
import sqlalchemy as sa


revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None

BATCH = 5000


def upgrade() -> None:
    op.add_column('submissions', sa.Column('email_key', sa.String(length=254), nullable=True))
    connection = op.get_bind()
    submissions = sa.table('submissions', sa.column('id', sa.Integer), sa.column('email', sa.String),
                           sa.column('email_key', sa.String))
    after = 0
    while True:
        rows = connection.execute(sa.select(submissions.c.id, submissions.c.email).where(submissions.c.id > after)
                                  .order_by(submissions.c.id).limit(BATCH)).all()
        if not rows:
            break
        connection.execute(submissions.update().where(submissions.c.id == sa.bindparam('row_id'))
                           .values(email_key=sa.bindparam('key')),
                           [{'row_id': row_id, 'key': email.lower() or None} for row_id, email in rows])
        after = rows[-1][0]
    op.create_index('ix_submissions_email_key', 'submissions', ['email_key'])
    op.drop_index('ix_submissions_email_lower', table_name='submissions')


def downgrade() -> None:
    op.create_index('ix_submissions_email_lower', 'submissions', [sa.text('lower(email)')], unique=False)
    op.drop_index('ix_submissions_email_key', table_name='submissions')
    op.drop_column('submissions', 'email_key')
