"""outbox: notifications of new inquiries, one row per channel

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-03

Each row is one e-mail or webhook to send; the message itself is built at
send time from the inquiry, and the row goes with its inquiry (ON DELETE
CASCADE). The index on ``(status, next_attempt_at)`` serves the due query;
the one on ``finished_at`` the cleanup of done and failed rows.
"""

from alembic import op
import sqlalchemy as sa


revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('outbox',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('inquiry_id', sa.Integer(), nullable=True),
    sa.Column('channel', sa.String(length=16), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('next_attempt_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('lease_until', sa.DateTime(timezone=True), nullable=True),
    sa.Column('last_error', sa.String(length=300), nullable=True),
    sa.Column('idempotency_key', sa.String(length=64), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('delivered_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('finished_at', sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['inquiry_id'], ['submissions.id'], name=op.f('fk_outbox_inquiry_id_submissions'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_outbox')),
    sa.UniqueConstraint('idempotency_key', name=op.f('uq_outbox_idempotency_key'))
    )
    with op.batch_alter_table('outbox', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_outbox_finished_at'), ['finished_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_outbox_inquiry_id'), ['inquiry_id'], unique=False)
        batch_op.create_index('ix_outbox_status_next_attempt_at', ['status', 'next_attempt_at'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('outbox', schema=None) as batch_op:
        batch_op.drop_index('ix_outbox_status_next_attempt_at')
        batch_op.drop_index(batch_op.f('ix_outbox_inquiry_id'))
        batch_op.drop_index(batch_op.f('ix_outbox_finished_at'))

    op.drop_table('outbox')
