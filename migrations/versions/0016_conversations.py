"""conversations: people's e-mails back into their inquiry's thread, and a retention clock per form

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-07

``inbound_messages`` holds each e-mail received about an inquiry, reduced
to plain text: in the inquiry's thread, or held apart for an owner (no
inquiry matched, or another address wrote). It goes with its inquiry
(``ON DELETE CASCADE``), its files with the inquiry's (``attachments.field_key``
``mail:<message id>``).
``submissions.last_message_at`` is the thread's last message, from which a
form whose ``retention_clock`` is ``last_message`` counts its retention;
every stored form keeps counting from receipt. ``forms.ack_quote_new``:
whether an acknowledgement may quote the person's text to an address that
has not written before (off).
"""

from alembic import op
import sqlalchemy as sa


revision = '0016'
down_revision = '0015'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('forms', sa.Column('retention_clock', sa.String(length=16), server_default='received',
                                     nullable=False))
    op.add_column('forms', sa.Column('ack_quote_new', sa.Boolean(), server_default='0', nullable=False))
    op.add_column('submissions', sa.Column('last_message_at', sa.DateTime(timezone=True), nullable=True))
    op.create_table(
        'inbound_messages',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('inquiry_id', sa.Integer(), nullable=True),
        sa.Column('state', sa.String(length=16), nullable=False),
        sa.Column('kind', sa.String(length=16), nullable=False),
        sa.Column('reason', sa.String(length=40), nullable=True),
        sa.Column('sender', sa.String(length=254), nullable=False),
        sa.Column('sender_key', sa.String(length=254), nullable=True),
        sa.Column('sender_name', sa.String(length=100), nullable=False),
        sa.Column('subject', sa.String(length=300), nullable=False),
        sa.Column('body', sa.Text(), nullable=False),
        sa.Column('message_id', sa.String(length=200), nullable=True),
        sa.Column('files_refused', sa.Integer(), nullable=False),
        sa.Column('received_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['inquiry_id'], ['submissions.id'],
                                name=op.f('fk_inbound_messages_inquiry_id_submissions'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_inbound_messages')),
    )
    op.create_index('ix_inbound_messages_inquiry_id_received_at', 'inbound_messages', ['inquiry_id', 'received_at'])
    op.create_index('ix_inbound_messages_state', 'inbound_messages', ['state'])
    op.create_index('ix_inbound_messages_sender_key', 'inbound_messages', ['sender_key'])
    op.create_index('ix_inbound_messages_message_id', 'inbound_messages', ['message_id'])


def downgrade() -> None:
    op.drop_index('ix_inbound_messages_message_id', table_name='inbound_messages')
    op.drop_index('ix_inbound_messages_sender_key', table_name='inbound_messages')
    op.drop_index('ix_inbound_messages_state', table_name='inbound_messages')
    op.drop_index('ix_inbound_messages_inquiry_id_received_at', table_name='inbound_messages')
    op.drop_table('inbound_messages')
    # Plain ALTER TABLE ... DROP COLUMN: a batch rebuild would drop the table, and SQLite's foreign keys
    # would take every row that refers to it along (deliveries, replies, files).
    op.drop_column('submissions', 'last_message_at')
    op.drop_column('forms', 'ack_quote_new')
    op.drop_column('forms', 'retention_clock')
