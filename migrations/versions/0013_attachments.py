"""attachments: files sent with inquiries, stored in the database in pieces

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-06

``attachments`` describes each file (display name, type detected from its
bytes, size); ``attachment_chunks`` holds its bytes in pieces of 256 KB.
Both go with their inquiry (``ON DELETE CASCADE``), in the same
transaction, on every replica: no file on any disk to forget. The cleanup
deletes an expired inquiry's pieces first, a few megabytes a batch.
"""

from alembic import op
import sqlalchemy as sa


revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'attachments',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('inquiry_id', sa.Integer(), nullable=False),
        sa.Column('field_key', sa.String(length=40), nullable=False),
        sa.Column('name', sa.String(length=200), nullable=False),
        sa.Column('content_type', sa.String(length=100), nullable=False),
        sa.Column('size', sa.Integer(), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['inquiry_id'], ['submissions.id'],
                                name=op.f('fk_attachments_inquiry_id_submissions'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_attachments')),
    )
    op.create_index('ix_attachments_inquiry_id', 'attachments', ['inquiry_id'])
    op.create_table(
        'attachment_chunks',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('attachment_id', sa.Integer(), nullable=False),
        sa.Column('seq', sa.Integer(), nullable=False),
        sa.Column('data', sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(['attachment_id'], ['attachments.id'],
                                name=op.f('fk_attachment_chunks_attachment_id_attachments'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_attachment_chunks')),
    )
    op.create_index('ix_attachment_chunks_attachment_id_seq', 'attachment_chunks', ['attachment_id', 'seq'],
                    unique=True)


def downgrade() -> None:
    op.drop_index('ix_attachment_chunks_attachment_id_seq', table_name='attachment_chunks')
    op.drop_table('attachment_chunks')
    op.drop_index('ix_attachments_inquiry_id', table_name='attachments')
    op.drop_table('attachments')
