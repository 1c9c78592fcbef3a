"""cleanup forgotten_at: when a run's deleted rows had left the search index and the WAL too

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-06

A run's ``finished_at`` is written when its batches end and its claim is
released; on SQLite the run then purges the search index of the deleted
text and checkpoints the WAL (``app.inquiries.gone``), which can take as long
as the batches. ``forgotten_at`` records when that ended: None for a run
that deleted nothing (there was nothing to forget), or whose process died
first. Existing runs get None.
"""

from alembic import op
import sqlalchemy as sa


revision = '0015'
down_revision = '0014'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('cleanup_runs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('forgotten_at', sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('cleanup_runs', schema=None) as batch_op:
        batch_op.drop_column('forgotten_at')
