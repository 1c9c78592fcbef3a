"""lean outbox: no unique index on the idempotency key, finished_at indexed only where set

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-03

Every submission writes its outbox rows inside its write transaction. The
unique index on ``idempotency_key`` (128 random bits) put each row on a
random page of its own, and every pending row entered the ``finished_at``
index as a NULL: on SQLite 23.4 WAL pages a submission against 20.3
without them (16.7 with no notifications). The cleanup's condition on
``finished_at`` (``<``) implies ``IS NOT NULL``, so both databases use the
partial index for it.
"""

from alembic import op
import sqlalchemy as sa


revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None

SET = sa.text("finished_at IS NOT NULL")


def upgrade() -> None:
    with op.batch_alter_table('outbox', schema=None) as batch_op:
        batch_op.drop_constraint('uq_outbox_idempotency_key', type_='unique')
        batch_op.drop_index('ix_outbox_finished_at')
    op.create_index('ix_outbox_finished_at', 'outbox', ['finished_at'], unique=False,
                    sqlite_where=SET, postgresql_where=SET)


def downgrade() -> None:
    op.drop_index('ix_outbox_finished_at', table_name='outbox')
    with op.batch_alter_table('outbox', schema=None) as batch_op:
        batch_op.create_index('ix_outbox_finished_at', ['finished_at'], unique=False)
        batch_op.create_unique_constraint('uq_outbox_idempotency_key', ['idempotency_key'])
