"""people: erasure records, and the address index for finding a person's inquiries

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-03

``erasures`` keeps, per erasure, a keyed hash of the address (never the
address), how many inquiries went and how many a legal hold kept, who did it
and when: enough for ``flask erasures apply`` to erase again after a restore.
``ix_submissions_email_lower`` serves the People page's case-insensitive
lookup by address on both databases.
"""

from alembic import op
import sqlalchemy as sa


revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('erasures',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('email_hash', sa.String(length=64), nullable=False),
    sa.Column('count', sa.Integer(), nullable=False),
    sa.Column('kept_on_hold', sa.Integer(), nullable=False),
    sa.Column('actor', sa.String(length=100), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_erasures'))
    )
    with op.batch_alter_table('erasures', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_erasures_email_hash'), ['email_hash'], unique=False)
    op.create_index('ix_submissions_email_lower', 'submissions', [sa.text('lower(email)')], unique=False)


def downgrade() -> None:
    op.drop_index('ix_submissions_email_lower', table_name='submissions')
    with op.batch_alter_table('erasures', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_erasures_email_hash'))
    op.drop_table('erasures')
