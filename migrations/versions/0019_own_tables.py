"""the spam word list and the notification settings leave ``settings`` for tables of their own

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-09

Every submission reads the spam word list and (when it reaches the inbox)
the notification settings, at most once a second per process; ``settings``
holds the cleanup's claim, whose row a request that finds no cleanup due
must never touch (docs/cleanup.md).

* ``spam_words``: the list admins edit on the Spam page, one row (``id`` 1),
  one entry a line, moved from the ``settings`` row ``spam_words``.
* ``notification_settings``: the ``notify_*`` rows of ``settings``, moved
  as they are.

The downgrade moves both back.
"""

from alembic import op
import sqlalchemy as sa


revision = '0019'
down_revision = '0018'
branch_labels = None
depends_on = None

NOTIFY_KEYS = (
    "('notify_emails', 'notify_webhook_url', 'notify_webhook_secret', 'notify_include_content', "
    "'notify_digest_minutes')"
)


def upgrade() -> None:
    op.create_table(
        'spam_words',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('entries', sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_spam_words')),
    )
    op.create_table(
        'notification_settings',
        sa.Column('key', sa.String(length=64), nullable=False),
        sa.Column('value', sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint('key', name=op.f('pk_notification_settings')),
    )
    op.execute("INSERT INTO spam_words (id, entries) SELECT 1, value FROM settings WHERE \"key\" = 'spam_words'")
    op.execute(
        'INSERT INTO notification_settings ("key", value) '
        f'SELECT "key", value FROM settings WHERE "key" IN {NOTIFY_KEYS}'
    )
    op.execute(f'DELETE FROM settings WHERE "key" = \'spam_words\' OR "key" IN {NOTIFY_KEYS}')


def downgrade() -> None:
    op.execute('INSERT INTO settings ("key", value) SELECT \'spam_words\', entries FROM spam_words WHERE id = 1')
    op.execute('INSERT INTO settings ("key", value) SELECT "key", value FROM notification_settings')
    op.drop_table('notification_settings')
    op.drop_table('spam_words')
