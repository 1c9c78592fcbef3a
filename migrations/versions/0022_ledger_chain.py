"""ledger chain: each cleanup run's row carries a hash over its content and the previous row's

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-09

``cleanup_runs.prev_hash`` and ``cleanup_runs.row_hash`` (``app.cleanup.chain``).
The rows already there are sealed here, in id order, with the rule as it
stands at this revision (copied below, not imported: a migration keeps
doing what it did when the code moves on); a row still running is left
for its run to seal. Downgrading drops both columns.
"""

import hashlib
import json
from datetime import UTC

from alembic import op
import sqlalchemy as sa


revision = '0022'
down_revision = '0021'
branch_labels = None
depends_on = None

GENESIS = "0" * 64

ledger = sa.table(
    'cleanup_runs',
    sa.column('id', sa.Integer),
    sa.column('trigger', sa.String),
    sa.column('started_at', sa.DateTime(timezone=True)),
    sa.column('finished_at', sa.DateTime(timezone=True)),
    sa.column('cutoff', sa.DateTime(timezone=True)),
    sa.column('retention_days', sa.Integer),
    sa.column('form_retention_days', sa.JSON),
    sa.column('deleted', sa.Text),
    sa.column('remaining', sa.Integer),
    sa.column('status', sa.String),
    sa.column('error', sa.String),
    sa.column('prev_hash', sa.String),
    sa.column('row_hash', sa.String),
)


def _moment(value):
    if value is None:
        return None
    value = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    return value.isoformat(timespec="microseconds")


def _digest(prev_hash, row):
    fields = {
        "id": row.id,
        "trigger": row.trigger,
        "started_at": _moment(row.started_at),
        "finished_at": _moment(row.finished_at),
        "cutoff": _moment(row.cutoff),
        "retention_days": row.retention_days,
        "form_retention_days": row.form_retention_days,
        "deleted": row.deleted,
        "remaining": row.remaining,
        "status": row.status,
        "error": row.error,
    }
    content = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(f"{prev_hash}\n{content}".encode()).hexdigest()


def upgrade() -> None:
    with op.batch_alter_table('cleanup_runs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('prev_hash', sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column('row_hash', sa.String(length=64), nullable=True))
    connection = op.get_bind()
    previous = GENESIS
    for row in connection.execute(sa.select(ledger).where(ledger.c.status != 'running').order_by(ledger.c.id)).all():
        row_hash = _digest(previous, row)
        connection.execute(
            sa.update(ledger).where(ledger.c.id == row.id).values(prev_hash=previous, row_hash=row_hash)
        )
        previous = row_hash


def downgrade() -> None:
    with op.batch_alter_table('cleanup_runs', schema=None) as batch_op:
        batch_op.drop_column('row_hash')
        batch_op.drop_column('prev_hash')
