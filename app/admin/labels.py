"""Words for the codes the admin pages show: cleanup targets, outcomes, triggers, audit actions.

The codes are stored, logged and exported as they are. English pages show
them as they are too (so the Cleanup page matches the logs and the JSON of
POST /internal/cleanup); the other languages show words for them. Each
message's context tells translators what kind of code it is. An unknown code
(a newer one) is shown as it is.
"""

from __future__ import annotations

from flask_babel import lazy_pgettext

from app.admin import bp

TARGET, OUTCOME, TRIGGER, ACTION = "cleanup target", "cleanup outcome", "cleanup trigger", "audit action"

LABELS = {
    # cleanup targets (app.cleanup.targets)
    "inquiries": lazy_pgettext(TARGET, "inquiries"),
    "spam": lazy_pgettext(TARGET, "spam"),
    "used_challenges": lazy_pgettext(TARGET, "used_challenges"),
    "one_time_secrets": lazy_pgettext(TARGET, "one_time_secrets"),
    "admin_logins": lazy_pgettext(TARGET, "admin_logins"),
    "rate_limits": lazy_pgettext(TARGET, "rate_limits"),
    "cleanup_runs": lazy_pgettext(TARGET, "cleanup_runs"),
    # how a run ended (CleanupStatus)
    "running": lazy_pgettext(OUTCOME, "running"),
    "ok": lazy_pgettext(OUTCOME, "ok"),
    "partial": lazy_pgettext(OUTCOME, "partial"),
    "error": lazy_pgettext(OUTCOME, "error"),
    "abandoned": lazy_pgettext(OUTCOME, "abandoned"),
    # what started a run (cleanup.trigger and cleanup.run callers)
    "admin_manual": lazy_pgettext(TRIGGER, "admin_manual"),
    "admin_inbox": lazy_pgettext(TRIGGER, "admin_inbox"),
    "admin_spam": lazy_pgettext(TRIGGER, "admin_spam"),
    "inquiry_form": lazy_pgettext(TRIGGER, "inquiry_form"),
    "inquiry_api": lazy_pgettext(TRIGGER, "inquiry_api"),
    "login_options": lazy_pgettext(TRIGGER, "login_options"),
    "login_verify": lazy_pgettext(TRIGGER, "login_verify"),
    "internal": lazy_pgettext(TRIGGER, "internal"),
    "cli": lazy_pgettext(TRIGGER, "cli"),
    # audit actions (app.admin.audit)
    "deleted": lazy_pgettext(ACTION, "deleted"),
    "spam_deleted": lazy_pgettext(ACTION, "spam deleted"),
    "marked_not_spam": lazy_pgettext(ACTION, "marked not spam"),
    "hold_placed": lazy_pgettext(ACTION, "hold placed"),
    "hold_released": lazy_pgettext(ACTION, "hold released"),
    "retention_changed": lazy_pgettext(ACTION, "retention changed"),
    "spam_retention_changed": lazy_pgettext(ACTION, "spam retention changed"),
    "language_changed": lazy_pgettext(ACTION, "language changed"),
}


@bp.app_template_filter("label")
def label(code: object) -> str:
    """The words for ``code`` in this request's language; the code itself when it has none."""
    text = LABELS.get(str(code))
    return str(text) if text is not None else str(code).replace("_", " ")
