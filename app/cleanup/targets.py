"""What the cleanup deletes: one target per table, each with its expiry predicate."""

from __future__ import annotations

from datetime import timedelta

from app import retention
from app.cleanup.batches import Target
from app.models import AdminLogin, CleanupRun, Inquiry, OneTimeSecret, RateLimit

LEDGER_KEEP = timedelta(days=90)

TARGETS: tuple[Target, ...] = (
    Target("inquiries", Inquiry, lambda m: retention.expired(m.cutoff), Inquiry.created_at),
    Target("one_time_secrets", OneTimeSecret, lambda m: OneTimeSecret.expires_at < m.now, OneTimeSecret.expires_at),
    Target("admin_logins", AdminLogin, lambda m: AdminLogin.expires_at < m.now, AdminLogin.expires_at),
    Target("rate_limits", RateLimit, lambda m: RateLimit.expires_at < m.now, RateLimit.expires_at),
    Target("cleanup_runs", CleanupRun, lambda m: CleanupRun.started_at < m.now - LEDGER_KEEP, CleanupRun.started_at),
)
