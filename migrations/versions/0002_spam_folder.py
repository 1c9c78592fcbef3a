"""spam folder: inquiry status, used proof-of-work challenges

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02

Every existing inquiry becomes ``inbox`` (the server default fills the new
column). The index on ``(created_at, id)`` is replaced by one on ``(status,
created_at, id)``: every query on inquiries now filters on the status first.

Downgrading keeps spam inquiries: with the column gone they show in the
inbox again, and follow the inbox retention. Delete them first ("Delete all
spam" on the Spam page) if that is not wanted.
"""

from alembic import op
import sqlalchemy as sa


revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('submissions', schema=None) as batch_op:
        batch_op.add_column(sa.Column('status', sa.String(length=16), server_default='inbox', nullable=False))
        batch_op.drop_index('ix_submissions_created_at_id')
        batch_op.create_index('ix_submissions_status_created_at_id', ['status', 'created_at', 'id'], unique=False)

    op.create_table('used_challenges',
    sa.Column('signature', sa.String(length=64), nullable=False),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('signature', name=op.f('pk_used_challenges'))
    )
    with op.batch_alter_table('used_challenges', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_used_challenges_expires_at'), ['expires_at'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('used_challenges', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_used_challenges_expires_at'))

    op.drop_table('used_challenges')
    with op.batch_alter_table('submissions', schema=None) as batch_op:
        batch_op.drop_index('ix_submissions_status_created_at_id')
        batch_op.create_index('ix_submissions_created_at_id', ['created_at', 'id'], unique=False)
        batch_op.drop_column('status')
