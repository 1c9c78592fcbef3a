"""inquiry views: read and unread become each admin's own, with a record of who opened what

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-07

``inquiry_views`` holds one row per admin and inquiry: when that admin
first and last opened it, and since when they have read it (``NULL``:
unread for them). Opening an inquiry writes only this row, so it changes
nothing another admin sees. The rows go with their inquiry and with their
admin (``ON DELETE CASCADE``): the cleanup, an admin's delete and an
erasure take them along.

The shared mark ``submissions.read_at`` and its index go. An inquiry read
before stays read for every admin (a row with ``read_at`` and no opening
times: the shared mark said that someone read it, not who). Downgrading
puts back the earliest read of each inquiry as its shared mark.
"""

from alembic import op
import sqlalchemy as sa


revision = '0014'
down_revision = '0013'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'inquiry_views',
        sa.Column('inquiry_id', sa.Integer(), nullable=False),
        sa.Column('admin_id', sa.Integer(), nullable=False),
        sa.Column('first_opened_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('last_opened_at', sa.DateTime(timezone=True), nullable=True),
        sa.Column('read_at', sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(['inquiry_id'], ['submissions.id'],
                                name=op.f('fk_inquiry_views_inquiry_id_submissions'), ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['admin_id'], ['admins.id'],
                                name=op.f('fk_inquiry_views_admin_id_admins'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('inquiry_id', 'admin_id', name=op.f('pk_inquiry_views')),
        sqlite_with_rowid=False,
    )
    op.create_index('ix_inquiry_views_admin_id', 'inquiry_views', ['admin_id'])
    op.execute(
        "INSERT INTO inquiry_views (inquiry_id, admin_id, read_at) "
        "SELECT submissions.id, admins.id, submissions.read_at FROM submissions CROSS JOIN admins "
        "WHERE submissions.read_at IS NOT NULL"
    )
    op.drop_index('ix_submissions_status_read_at_created_at', table_name='submissions')
    # A plain DROP COLUMN on both databases (SQLite 3.35 and later): no copy of the table, so the search
    # index's triggers (0004) stay as they are.
    op.drop_column('submissions', 'read_at')


def downgrade() -> None:
    op.add_column('submissions', sa.Column('read_at', sa.DateTime(timezone=True), nullable=True))
    op.execute(
        "UPDATE submissions SET read_at = (SELECT min(inquiry_views.read_at) FROM inquiry_views "
        "WHERE inquiry_views.inquiry_id = submissions.id)"
    )
    op.create_index('ix_submissions_status_read_at_created_at', 'submissions', ['status', 'read_at', 'created_at'])
    op.drop_index('ix_inquiry_views_admin_id', table_name='inquiry_views')
    op.drop_table('inquiry_views')
