"""team inbox: admin roles and their forms, triage (state, assignment, tags, notes), who opened what

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-08

``admins.role`` is ``owner``, ``responder`` or ``viewer``; every admin
from before is an owner, so nobody loses anything by upgrading.
``admin_forms`` lists the forms given to a responder or viewer, and
``erasures.form_ids`` the forms an erasure by one of them covered.

Triage lives beside ``submissions``, not in it, so the intake writes no
more per inquiry and no SQLite table copy drops the search triggers:
``inquiry_triage`` (state and assignment; no row is open and unassigned),
``tags`` and ``inquiry_tags``, ``inquiry_notes``. Each goes with its
inquiry (``ON DELETE CASCADE``). ``accesses`` records openings, file
downloads and exports by number only, and outlives its inquiry under the
audit log's retention.
"""

from alembic import op
import sqlalchemy as sa


revision = '0017'
down_revision = '0016'
branch_labels = None
depends_on = None


def _inquiry_fk(table: str):
    return sa.ForeignKeyConstraint(['inquiry_id'], ['submissions.id'],
                                   name=op.f(f'fk_{table}_inquiry_id_submissions'), ondelete='CASCADE')


def upgrade() -> None:
    op.add_column('admins', sa.Column('role', sa.String(16), nullable=False, server_default='owner'))
    op.add_column('erasures', sa.Column('form_ids', sa.JSON(), nullable=True))
    op.create_table(
        'admin_forms',
        sa.Column('admin_id', sa.Integer(), nullable=False),
        sa.Column('form_id', sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(['admin_id'], ['admins.id'], name=op.f('fk_admin_forms_admin_id_admins'),
                                ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['form_id'], ['forms.id'], name=op.f('fk_admin_forms_form_id_forms'),
                                ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('admin_id', 'form_id', name=op.f('pk_admin_forms')),
    )
    op.create_index('ix_admin_forms_form_id', 'admin_forms', ['form_id'])
    op.create_table(
        'inquiry_triage',
        sa.Column('inquiry_id', sa.Integer(), nullable=False),
        sa.Column('state', sa.String(16), nullable=False, server_default='open'),
        sa.Column('assigned_to', sa.Integer(), nullable=True),
        sa.Column('changed_at', sa.DateTime(timezone=True), nullable=False),
        _inquiry_fk('inquiry_triage'),
        sa.ForeignKeyConstraint(['assigned_to'], ['admins.id'], name=op.f('fk_inquiry_triage_assigned_to_admins'),
                                ondelete='SET NULL'),
        sa.PrimaryKeyConstraint('inquiry_id', name=op.f('pk_inquiry_triage')),
    )
    op.create_index('ix_inquiry_triage_assigned_to', 'inquiry_triage', ['assigned_to'])
    op.create_table(
        'tags',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('name', sa.String(40), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_tags')),
        sa.UniqueConstraint('name', name=op.f('uq_tags_name')),
    )
    op.create_table(
        'inquiry_tags',
        sa.Column('inquiry_id', sa.Integer(), nullable=False),
        sa.Column('tag_id', sa.Integer(), nullable=False),
        _inquiry_fk('inquiry_tags'),
        sa.ForeignKeyConstraint(['tag_id'], ['tags.id'], name=op.f('fk_inquiry_tags_tag_id_tags'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('inquiry_id', 'tag_id', name=op.f('pk_inquiry_tags')),
    )
    op.create_index('ix_inquiry_tags_tag_id', 'inquiry_tags', ['tag_id'])
    op.create_table(
        'inquiry_notes',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('inquiry_id', sa.Integer(), nullable=False),
        sa.Column('admin_id', sa.Integer(), nullable=True),
        sa.Column('admin_name', sa.String(100), nullable=False),
        sa.Column('body', sa.Text(), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        _inquiry_fk('inquiry_notes'),
        sa.ForeignKeyConstraint(['admin_id'], ['admins.id'], name=op.f('fk_inquiry_notes_admin_id_admins'),
                                ondelete='SET NULL'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_inquiry_notes')),
    )
    op.create_index('ix_inquiry_notes_inquiry_id', 'inquiry_notes', ['inquiry_id'])
    op.create_table(
        'accesses',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('admin_id', sa.Integer(), nullable=True),
        sa.Column('admin_name', sa.String(100), nullable=False),
        sa.Column('kind', sa.String(16), nullable=False),
        sa.Column('inquiry_id', sa.Integer(), nullable=True),
        sa.Column('count', sa.Integer(), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['admin_id'], ['admins.id'], name=op.f('fk_accesses_admin_id_admins'),
                                ondelete='SET NULL'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_accesses')),
    )
    op.create_index('ix_accesses_inquiry_id', 'accesses', ['inquiry_id'])
    op.create_index('ix_accesses_created_at', 'accesses', ['created_at'])


def downgrade() -> None:
    for table, indexes in (('accesses', ('ix_accesses_created_at', 'ix_accesses_inquiry_id')),
                           ('inquiry_notes', ('ix_inquiry_notes_inquiry_id',)),
                           ('inquiry_tags', ('ix_inquiry_tags_tag_id',)), ('tags', ()),
                           ('inquiry_triage', ('ix_inquiry_triage_assigned_to',)),
                           ('admin_forms', ('ix_admin_forms_form_id',))):
        for index in indexes:
            op.drop_index(index, table_name=table)
        op.drop_table(table)
    # A plain DROP COLUMN on both databases (SQLite 3.35 and later): no copy of the table.
    op.drop_column('erasures', 'form_ids')
    op.drop_column('admins', 'role')
