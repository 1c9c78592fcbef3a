"""notify cap bucket: the hourly cap of e-mail and chat notifications counts under its own name

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-07

The cap (``SUNDOWN_NOTIFY_HOURLY_CAP``) counts inquiries notified by e-mail
or chat in one ``rate_limits`` row per clock hour, keyed
``<bucket>:3600:all:<hour>``. Its bucket was ``notify-email`` from before
chat existed; it is ``notify-messages`` now. The rows counting the current
hour are renamed here, so an upgrade within an hour neither restarts the
count nor lets the hour send twice its cap; downgrading names them back.
The names are copied here, not imported: a migration keeps doing what it
did when the code moves on.
"""

from alembic import op
import sqlalchemy as sa


revision = '0025'
down_revision = '0024'
branch_labels = None
depends_on = None

OLD, NEW = 'notify-email', 'notify-messages'


def _rename(old: str, new: str) -> None:
    # ``substr`` and ``||`` mean the same on SQLite and PostgreSQL; the prefix holds no LIKE wildcard.
    op.get_bind().execute(
        sa.text("UPDATE rate_limits SET key = :new || substr(key, :rest) WHERE key LIKE :pattern"),
        {"new": new, "rest": len(old) + 1, "pattern": f"{old}:%"},
    )


def upgrade():
    _rename(OLD, NEW)


def downgrade():
    _rename(NEW, OLD)
