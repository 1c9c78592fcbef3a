"""Words for the codes the admin pages show: cleanup targets, outcomes, triggers, audit actions.

The codes are stored, logged and exported as they are. Cleanup targets are
table names, so every language shows words for them (English included);
the other codes show as they are on English pages (so the Cleanup page
matches the logs and the JSON of POST /internal/cleanup), as words elsewhere. Each
message's context tells translators what kind of code it is. An unknown code
(a newer one) is shown as it is.
"""

from __future__ import annotations

from flask_babel import lazy_pgettext

from app.models import AuditAction

# The contexts are written out: the extractor reads only literal strings.
LABELS = {
    # cleanup targets (app.cleanup.targets)
    "inquiries": lazy_pgettext("cleanup target", "inquiries"),
    "spam": lazy_pgettext("cleanup target", "spam"),
    "attachment_chunks": lazy_pgettext("cleanup target", "pieces of files (256 KB each)"),
    "used_challenges": lazy_pgettext("cleanup target", "used passkey challenges"),
    "one_time_secrets": lazy_pgettext("cleanup target", "one-time links"),
    "admin_logins": lazy_pgettext("cleanup target", "admin sign-ins"),
    "rate_limits": lazy_pgettext("cleanup target", "rate-limit counters"),
    "cleanup_runs": lazy_pgettext("cleanup target", "cleanup runs"),
    "audit_entries": lazy_pgettext("cleanup target", "audit log entries"),
    # how a run ended (CleanupStatus)
    "running": lazy_pgettext("cleanup outcome", "running"),
    "ok": lazy_pgettext("cleanup outcome", "ok"),
    "partial": lazy_pgettext("cleanup outcome", "partial"),
    "error": lazy_pgettext("cleanup outcome", "error"),
    "abandoned": lazy_pgettext("cleanup outcome", "abandoned"),
    # what started a run (cleanup.trigger and cleanup.run callers)
    "admin_manual": lazy_pgettext("cleanup trigger", "admin_manual"),
    "admin_inbox": lazy_pgettext("cleanup trigger", "admin_inbox"),
    "admin_spam": lazy_pgettext("cleanup trigger", "admin_spam"),
    "inquiry_form": lazy_pgettext("cleanup trigger", "inquiry_form"),
    "inquiry_api": lazy_pgettext("cleanup trigger", "inquiry_api"),
    "login_options": lazy_pgettext("cleanup trigger", "login_options"),
    "login_verify": lazy_pgettext("cleanup trigger", "login_verify"),
    "internal": lazy_pgettext("cleanup trigger", "internal"),
    "cli": lazy_pgettext("cleanup trigger", "cli"),
    # audit actions (AuditAction, written by app.audit)
    AuditAction.DELETED: lazy_pgettext("audit action", "deleted"),
    AuditAction.SPAM_DELETED: lazy_pgettext("audit action", "spam deleted"),
    AuditAction.MARKED_NOT_SPAM: lazy_pgettext("audit action", "marked not spam"),
    AuditAction.MARKED_SPAM: lazy_pgettext("audit action", "marked spam"),
    AuditAction.SPAM_WORDS_CHANGED: lazy_pgettext("audit action", "spam words changed"),
    AuditAction.SITE_ALLOWED: lazy_pgettext("audit action", "site allowed"),
    AuditAction.HOLD_PLACED: lazy_pgettext("audit action", "hold placed"),
    AuditAction.HOLD_RELEASED: lazy_pgettext("audit action", "hold released"),
    AuditAction.RETENTION_CHANGED: lazy_pgettext("audit action", "retention changed"),
    AuditAction.SPAM_RETENTION_CHANGED: lazy_pgettext("audit action", "spam retention changed"),
    AuditAction.LANGUAGE_CHANGED: lazy_pgettext("audit action", "language changed"),
}


def label(code: object) -> str:
    """The words for ``code`` in this request's language; the code itself when it has none."""
    text = LABELS.get(str(code))
    return str(text) if text is not None else str(code).replace("_", " ")
