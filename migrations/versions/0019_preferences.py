"""preferences: what admins choose, apart from the cleanup's claim

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-07

``settings`` keeps the cleanup's claim (``last_cleanup_at``) and the site's
retention; the notification choices admins save on the Notifications page
and the spam word list move to ``preferences``. Every process reads them
again once a second (``app.notify.settings.FRESH_FOR``,
``app.inquiries.signals.FRESH_FOR``): kept apart, an ordinary request that is
not due for a cleanup names ``settings`` in no statement at all, which the
benchmark counts (``settings_statements_per_not_due_request``).
"""

from alembic import op
import sqlalchemy as sa


revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

MOVED = (
    "notify_emails",
    "notify_webhook_url",
    "notify_webhook_secret",
    "notify_include_content",
    "notify_digest_minutes",
    "spam_words",
)


def upgrade() -> None:
    op.create_table(
        "preferences",
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_preferences")),
    )
    _move("settings", "preferences")


def downgrade() -> None:
    _move("preferences", "settings")
    op.drop_table("preferences")


def _move(source: str, target: str) -> None:
    keys = ", ".join(f"'{key}'" for key in MOVED)
    op.execute(f"INSERT INTO {target} (key, value) SELECT key, value FROM {source} WHERE key IN ({keys})")
    op.execute(f"DELETE FROM {source} WHERE key IN ({keys})")
