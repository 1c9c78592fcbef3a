"""Words for the codes the admin pages show: cleanup targets, outcomes, triggers, audit actions, roles, states.

The codes are stored, logged and exported as they are; the pages show words
for them in every language, English included (the logs and the JSON of
POST /internal/cleanup keep the codes). Each message's context tells
translators what kind of code it is. An unknown code (a newer one) is shown
with its underscores as spaces.
"""

from __future__ import annotations

from flask_babel import lazy_gettext as _l
from flask_babel import lazy_pgettext

from app.models import AccessKind, AdminRole, AuditAction, InquiryState

# The contexts are written out: the extractor reads only literal strings.
LABELS = {
    # cleanup targets (app.cleanup.targets)
    "inquiries": lazy_pgettext("cleanup target", "inquiries"),
    "spam": lazy_pgettext("cleanup target", "spam"),
    "anonymised": lazy_pgettext("cleanup target", "inquiries anonymised"),
    "attachment_chunks": lazy_pgettext("cleanup target", "pieces of files (256 KB each)"),
    "used_challenges": lazy_pgettext("cleanup target", "used passkey challenges"),
    "one_time_secrets": lazy_pgettext("cleanup target", "one-time links"),
    "admin_logins": lazy_pgettext("cleanup target", "admin sign-ins"),
    "rate_limits": lazy_pgettext("cleanup target", "rate-limit counters"),
    "cleanup_runs": lazy_pgettext("cleanup target", "cleanup runs"),
    "audit_entries": lazy_pgettext("cleanup target", "audit log entries"),
    "accesses": lazy_pgettext("cleanup target", "records of who opened what"),
    "form_tallies": lazy_pgettext("cleanup target", "counts per form of inquiries removed"),
    # how a run ended (CleanupStatus)
    "running": lazy_pgettext("cleanup outcome", "running"),
    "ok": lazy_pgettext("cleanup outcome", "ok"),
    "partial": lazy_pgettext("cleanup outcome", "partial"),
    "error": lazy_pgettext("cleanup outcome", "error"),
    "abandoned": lazy_pgettext("cleanup outcome", "abandoned"),
    # what started a run (cleanup.trigger and cleanup.run callers)
    "admin_manual": lazy_pgettext("cleanup trigger", "Run cleanup now, by an admin"),
    "admin_inbox": lazy_pgettext("cleanup trigger", "an admin opening the inbox"),
    "admin_spam": lazy_pgettext("cleanup trigger", "an admin opening Spam"),
    "inquiry_form": lazy_pgettext("cleanup trigger", "an inquiry sent by the form"),
    "inquiry_api": lazy_pgettext("cleanup trigger", "an inquiry sent by the API"),
    "login_options": lazy_pgettext("cleanup trigger", "the login page"),
    "login_verify": lazy_pgettext("cleanup trigger", "a login"),
    "internal": lazy_pgettext("cleanup trigger", "the internal cleanup endpoint"),
    "cli": lazy_pgettext("cleanup trigger", "the command line"),
    "healthz": lazy_pgettext("cleanup trigger", "a health check"),
    # audit actions (AuditAction, written by app.audit)
    AuditAction.DELETED: lazy_pgettext("audit action", "deleted"),
    AuditAction.SPAM_DELETED: lazy_pgettext("audit action", "spam deleted"),
    AuditAction.MARKED_NOT_SPAM: lazy_pgettext("audit action", "marked not spam"),
    AuditAction.MARKED_SPAM: lazy_pgettext("audit action", "marked spam"),
    AuditAction.SPAM_WORDS_CHANGED: lazy_pgettext("audit action", "spam words changed"),
    AuditAction.SITE_ALLOWED: lazy_pgettext("audit action", "site allowed"),
    AuditAction.DELIVERY_SENT_AGAIN: lazy_pgettext("audit action", "notification sent again"),
    AuditAction.HOLD_PLACED: lazy_pgettext("audit action", "hold placed"),
    AuditAction.HOLD_RELEASED: lazy_pgettext("audit action", "hold released"),
    AuditAction.RETENTION_CHANGED: lazy_pgettext("audit action", "retention changed"),
    AuditAction.SPAM_RETENTION_CHANGED: lazy_pgettext("audit action", "spam retention changed"),
    AuditAction.LANGUAGE_CHANGED: lazy_pgettext("audit action", "language changed"),
    AuditAction.ROLE_CHANGED: lazy_pgettext("audit action", "role changed"),
    AuditAction.STATE_CHANGED: lazy_pgettext("audit action", "state changed"),
    AuditAction.ASSIGNED: lazy_pgettext("audit action", "assigned"),
    AuditAction.TAGGED: lazy_pgettext("audit action", "tags changed"),
    AuditAction.NOTE_ADDED: lazy_pgettext("audit action", "note added"),
    AuditAction.TAG_CREATED: lazy_pgettext("audit action", "tag created"),
    AuditAction.TAG_DELETED: lazy_pgettext("audit action", "tag deleted"),
    AuditAction.MARKED_READ: lazy_pgettext("audit action", "marked read"),
    AuditAction.MARKED_UNREAD: lazy_pgettext("audit action", "marked unread"),
    AuditAction.MARKED_ANSWERED: lazy_pgettext("audit action", "marked answered"),
    AuditAction.MARKED_UNANSWERED: lazy_pgettext("audit action", "marked unanswered"),
    AuditAction.REPLY_SENT: lazy_pgettext("audit action", "reply sent"),
    AuditAction.HELD_MESSAGE_THREADED: lazy_pgettext("audit action", "held e-mail put into its inquiry"),
    AuditAction.HELD_MESSAGE_DELETED: lazy_pgettext("audit action", "held e-mail deleted"),
    AuditAction.ERASED: lazy_pgettext("audit action", "erased"),
    AuditAction.ERASURES_APPLIED: lazy_pgettext("audit action", "erasures applied after a restore"),
    AuditAction.NOTIFICATIONS_CHANGED: lazy_pgettext("audit action", "notifications changed"),
    AuditAction.WEBHOOK_SECRET_CREATED: lazy_pgettext("audit action", "webhook secret created"),
    AuditAction.WEBHOOK_SECRET_ROTATED: lazy_pgettext("audit action", "webhook secret rotated"),
    AuditAction.NOTIFICATION_TEST: lazy_pgettext("audit action", "test notification sent"),
    AuditAction.FORM_CREATED: lazy_pgettext("audit action", "form created"),
    AuditAction.FORM_CHANGED: lazy_pgettext("audit action", "form changed"),
    AuditAction.FORM_DELETED: lazy_pgettext("audit action", "form deleted"),
    AuditAction.INVITE_CREATED: lazy_pgettext("audit action", "invitation created"),
    AuditAction.ADMIN_ENROLLED: lazy_pgettext("audit action", "admin enrolled"),
    AuditAction.ADMIN_REMOVED: lazy_pgettext("audit action", "admin removed"),
    AuditAction.SESSIONS_REVOKED: lazy_pgettext("audit action", "logins ended"),
    AuditAction.SESSION_REVOKED: lazy_pgettext("audit action", "a login ended"),
    AuditAction.PASSKEY_ADDED: lazy_pgettext("audit action", "passkey added"),
    AuditAction.PASSKEY_RENAMED: lazy_pgettext("audit action", "passkey renamed"),
    AuditAction.PASSKEY_REMOVED: lazy_pgettext("audit action", "passkey removed"),
    AuditAction.EMAIL_CHANGED: lazy_pgettext("audit action", "reply address changed"),
    AuditAction.NAME_CHANGED: lazy_pgettext("audit action", "name changed"),
    # admin roles (AdminRole)
    AdminRole.OWNER: lazy_pgettext("admin role", "Owner"),
    AdminRole.RESPONDER: lazy_pgettext("admin role", "Responder"),
    AdminRole.VIEWER: lazy_pgettext("admin role", "Viewer"),
    # where the work on an inquiry stands (InquiryState)
    InquiryState.OPEN: lazy_pgettext("inquiry state", "Open"),
    InquiryState.WAITING: lazy_pgettext("inquiry state", "Waiting"),
    InquiryState.CLOSED: lazy_pgettext("inquiry state", "Closed"),
    # what an admin opened (AccessKind)
    AccessKind.OPENED: lazy_pgettext("access", "opened the inquiry"),
    AccessKind.FILE: lazy_pgettext("access", "opened a file"),
    AccessKind.EXPORT: lazy_pgettext("access", "exported inquiries (CSV)"),
    AccessKind.PERSON_EXPORT: lazy_pgettext("access", "exported the person's data"),
}


# Why an inquiry is in spam (``Inquiry.spam_checks``, ``app.inquiries.spam.Reason``); {detail} follows a colon.
SPAM_CHECKS = {
    "no_solution": _l("sent without the browser's automatic check (no JavaScript, or a script)"),
    "malformed_solution": _l("a broken answer to the browser's check"),
    "invalid_solution": _l("a wrong answer to the browser's check"),
    "expired_challenge": _l("an expired browser check"),
    "replayed_solution": _l("a browser check already used by another inquiry"),
    "no_render_time": _l("a form whose time of showing was missing or altered"),
    "too_fast": _l("sent faster than a person types"),
    "form_too_old": _l("sent from a form shown more than a day before"),
    "links": _l("links in the text: {detail}"),
    "markup": _l("HTML or forum markup in the text"),
    "listed_word": _l("a word or domain on your list: {detail}"),
    "marked_sender": _l("a sender you moved to spam before"),
    "learned": _l("the score learned from your spam and not-spam moves: {detail}"),
    "marked_by_admin": _l("moved to spam by an admin"),
}


def spam_check(code: str) -> str:
    """Words for one of the checks that put an inquiry in spam, with its detail."""
    name, _sep, detail = str(code).partition(":")
    text = SPAM_CHECKS.get(name)
    return str(text).format(detail=detail) if text is not None else str(code)


def label(code: object) -> str:
    """The words for ``code`` in this request's language; the code itself when it has none."""
    text = LABELS.get(str(code))
    return str(text) if text is not None else str(code).replace("_", " ")
