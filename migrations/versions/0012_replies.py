"""replies: answers sent from the inbox and acknowledgements, each an e-mail through the outbox

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-05

``replies`` holds what was sent to the person who wrote (an admin's reply
or a form's acknowledgement), with its thread id and the outbox row that
carries it; it goes with its inquiry (``ON DELETE CASCADE``), so the
cleanup, an admin's delete and an erasure take it along, and a legal hold
keeps it. Admins get an address for ``Reply-To``; forms get their
acknowledgement settings (off for every stored form). On PostgreSQL the
reply text gets a trigram index, as the inquiry's columns have (0004).
"""

from alembic import op
import sqlalchemy as sa


revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('admins', sa.Column('email', sa.String(length=254), nullable=True))
    op.add_column('forms', sa.Column('ack_enabled', sa.Boolean(), server_default='0', nullable=False))
    op.add_column('forms', sa.Column('ack_include_message', sa.Boolean(), server_default='0', nullable=False))
    op.add_column('forms', sa.Column('ack_texts', sa.JSON(), nullable=True))
    op.create_table(
        'replies',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('inquiry_id', sa.Integer(), nullable=False),
        sa.Column('admin_id', sa.Integer(), nullable=True),
        sa.Column('kind', sa.String(length=16), nullable=False),
        sa.Column('subject', sa.String(length=300), nullable=False),
        sa.Column('body', sa.Text(), nullable=False),
        sa.Column('locale', sa.String(length=16), nullable=False),
        sa.Column('reply_to', sa.String(length=254), nullable=True),
        sa.Column('message_id', sa.String(length=200), nullable=False),
        sa.Column('status', sa.String(length=16), nullable=False),
        sa.Column('delivery_id', sa.Integer(), nullable=True),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('sent_at', sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(['inquiry_id'], ['submissions.id'], name=op.f('fk_replies_inquiry_id_submissions'),
                                ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['admin_id'], ['admins.id'], name=op.f('fk_replies_admin_id_admins'),
                                ondelete='SET NULL'),
        sa.ForeignKeyConstraint(['delivery_id'], ['deliveries.id'], name=op.f('fk_replies_delivery_id_deliveries'),
                                ondelete='SET NULL'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_replies')),
    )
    op.create_index('ix_replies_inquiry_id', 'replies', ['inquiry_id'])
    op.create_index('ix_replies_delivery_id', 'replies', ['delivery_id'])
    op.create_index('ix_replies_admin_id', 'replies', ['admin_id'])
    if op.get_bind().dialect.name == 'postgresql':
        op.execute("CREATE INDEX ix_replies_body_trgm ON replies USING gin (body gin_trgm_ops)")


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS ix_replies_body_trgm")
    op.drop_index('ix_replies_admin_id', table_name='replies')
    op.drop_index('ix_replies_delivery_id', table_name='replies')
    op.drop_index('ix_replies_inquiry_id', table_name='replies')
    op.drop_table('replies')
    with op.batch_alter_table('forms') as batch:
        batch.drop_column('ack_texts')
        batch.drop_column('ack_include_message')
        batch.drop_column('ack_enabled')
    with op.batch_alter_table('admins') as batch:
        batch.drop_column('email')
