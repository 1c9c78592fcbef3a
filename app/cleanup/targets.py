"""What the cleanup deletes: one target per kind of row, each with its expiry predicate.

Inquiries and spam are two targets on one table, each with its own cutoff.
A run's ``Moment`` carries the inbox cutoff, fixed when the run took the
claim; the spam cutoff is read from its stored retention each time a batch
is planned (one primary-key read per batch), so it is the one in force then,
as ``retention.visible_now`` reads it for every page.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import ColumnElement

from app import db, retention
from app.cleanup.batches import Moment, Target
from app.models import AdminLogin, CleanupRun, Delivery, Inquiry, OneTimeSecret, RateLimit, UsedChallenge

LEDGER_KEEP = timedelta(days=90)
DELIVERIES_KEEP = timedelta(days=30)  # done and failed notifications: the health figures look back this far


def spam_expired(moment: Moment) -> ColumnElement[bool]:
    """Spam inquiries past the spam retention at ``moment.now`` (and not on hold)."""
    with db.transaction() as session:
        days = retention.spam_retention_days(session)
    return retention.expired_in(retention.SPAM, retention.cutoff_for(moment.now, days))


TARGETS: tuple[Target, ...] = (
    Target("inquiries", Inquiry, lambda m: retention.expired_in(retention.INBOX, m.cutoff), Inquiry.created_at),
    Target("spam", Inquiry, spam_expired, Inquiry.created_at),
    Target("used_challenges", UsedChallenge, lambda m: UsedChallenge.expires_at < m.now, UsedChallenge.expires_at),
    Target("one_time_secrets", OneTimeSecret, lambda m: OneTimeSecret.expires_at < m.now, OneTimeSecret.expires_at),
    Target("admin_logins", AdminLogin, lambda m: AdminLogin.expires_at < m.now, AdminLogin.expires_at),
    Target("rate_limits", RateLimit, lambda m: RateLimit.expires_at < m.now, RateLimit.expires_at),
    # Pending deliveries have no finished_at and are never deleted here (their inquiry's deletion cascades).
    Target("deliveries", Delivery, lambda m: Delivery.finished_at < m.now - DELIVERIES_KEEP, Delivery.finished_at),
    Target("cleanup_runs", CleanupRun, lambda m: CleanupRun.started_at < m.now - LEDGER_KEEP, CleanupRun.started_at),
)
