"""lean writes: the outbox and used challenges keep only the indexes their readers need

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-03

Every submission writes its outbox rows, and every solved one its used
challenge, inside its write transaction. Measured on SQLite in WAL pages a
submission (two thousand before it):

* ``outbox``: the unique index on ``idempotency_key`` (128 random bits) put
  each row on a random page of its own, and every pending row entered the
  ``finished_at`` index as a NULL; 23.4 pages with notifications, 20.3
  without them (16.7 with no notifications). The cleanup's condition on
  ``finished_at`` (``<``) implies ``IS NOT NULL``, so both databases use the
  partial index for it.
* ``used_challenges``: keyed by the random signature, with an index on the
  expiry, it cost 3.8 pages; keyed by (expiry, signature), which is as
  unique (the signature covers the expiry), a new row lands at the key's end
  and the cleanup needs no other index; on SQLite the table is the key
  (``WITHOUT ROWID``): 1.4 pages. Its rows are copied over.
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
    _rekey_used_challenges(('expires_at', 'signature'), expiry_index=False, with_rowid=False)


def downgrade() -> None:
    _rekey_used_challenges(('signature',), expiry_index=True, with_rowid=True)
    op.drop_index('ix_outbox_finished_at', table_name='outbox')
    with op.batch_alter_table('outbox', schema=None) as batch_op:
        batch_op.create_index('ix_outbox_finished_at', ['finished_at'], unique=False)
        batch_op.create_unique_constraint('uq_outbox_idempotency_key', ['idempotency_key'])


def _rekey_used_challenges(key: tuple[str, ...], expiry_index: bool, with_rowid: bool) -> None:
    """Make ``used_challenges`` anew with primary key ``key``, copying its rows (SQLite cannot change a
    table's key or ``WITHOUT ROWID`` in place)."""
    op.drop_index('ix_used_challenges_expires_at', table_name='used_challenges', if_exists=True)
    op.rename_table('used_challenges', 'used_challenges_old')
    if op.get_bind().dialect.name == 'postgresql':  # constraint names are the indexes' names there
        op.execute('ALTER TABLE used_challenges_old RENAME CONSTRAINT pk_used_challenges TO pk_used_challenges_old')
    op.create_table('used_challenges',
    sa.Column('signature', sa.String(length=64), nullable=False),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint(*key, name=op.f('pk_used_challenges')),
    sqlite_with_rowid=with_rowid,
    )
    op.execute('INSERT INTO used_challenges (signature, expires_at) SELECT signature, expires_at FROM used_challenges_old')
    op.drop_table('used_challenges_old')
    if expiry_index:
        op.create_index(op.f('ix_used_challenges_expires_at'), 'used_challenges', ['expires_at'], unique=False)
