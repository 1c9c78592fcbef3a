"""held files: an e-mail held apart keeps its files, stored as every other file is

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-10

``attachments.held_message_id`` names the held e-mail (``inbound_messages``)
a file came with, until an owner puts that e-mail into a thread (the file
then moves to the inquiry) or it is deleted (``ON DELETE CASCADE``, its
pieces with it). ``attachments.inquiry_id`` may then be NULL: exactly one
of the two is set (``ck_attachments_one_owner``).

On SQLite this rebuilds ``attachments``. Dropping the old table with foreign
keys on would first delete every row of ``attachment_chunks`` (their
``ON DELETE CASCADE``): every file's bytes. So this runs only with foreign
keys off, as ``app.core.migrate`` and ``env.py`` run every migration, and
refuses otherwise. Downgrading deletes the held e-mails' files first (their
pieces by hand: foreign keys are off), then drops the column.
"""

from alembic import op
import sqlalchemy as sa


revision = '0023'
down_revision = '0022'
branch_labels = None
depends_on = None

ONE_OWNER = "(inquiry_id IS NULL) <> (held_message_id IS NULL)"
FOREIGN_KEY = 'fk_attachments_held_message_id_inbound_messages'

attachments = sa.table('attachments', sa.column('id', sa.Integer), sa.column('held_message_id', sa.Integer))
chunks = sa.table('attachment_chunks', sa.column('attachment_id', sa.Integer))


def _refuse_with_foreign_keys_on() -> None:
    bind = op.get_bind()
    if bind.dialect.name == 'sqlite' and bind.exec_driver_sql('PRAGMA foreign_keys').scalar():
        raise RuntimeError(
            "0023 rebuilds attachments: with SQLite's foreign keys on, every file's pieces would be deleted; "
            "run it through `flask db-upgrade` (app.core.migrate) or `alembic` (migrations/env.py)"
        )


def upgrade() -> None:
    _refuse_with_foreign_keys_on()
    with op.batch_alter_table('attachments', schema=None) as batch_op:
        batch_op.add_column(sa.Column('held_message_id', sa.Integer(), nullable=True))
        batch_op.alter_column('inquiry_id', existing_type=sa.Integer(), nullable=True)
        batch_op.create_foreign_key(FOREIGN_KEY, 'inbound_messages', ['held_message_id'], ['id'], ondelete='CASCADE')
        batch_op.create_check_constraint('ck_attachments_one_owner', ONE_OWNER)
    op.create_index('ix_attachments_held_message_id', 'attachments', ['held_message_id'])


def downgrade() -> None:
    _refuse_with_foreign_keys_on()
    held = sa.select(attachments.c.id).where(attachments.c.held_message_id.is_not(None))
    op.execute(sa.delete(chunks).where(chunks.c.attachment_id.in_(held)))
    op.execute(sa.delete(attachments).where(attachments.c.held_message_id.is_not(None)))
    op.drop_index('ix_attachments_held_message_id', table_name='attachments')
    with op.batch_alter_table('attachments', schema=None) as batch_op:
        batch_op.drop_constraint('ck_attachments_one_owner', type_='check')
        batch_op.drop_constraint(FOREIGN_KEY, type_='foreignkey')
        batch_op.drop_column('held_message_id')
        batch_op.alter_column('inquiry_id', existing_type=sa.Integer(), nullable=False)
