"""The policy: the one permission each page and action under /admin needs, by endpoint.

``app.admin.guard`` reads it before every request under /admin: an
endpoint missing here is refused (403), so a new route is closed until it
is listed. ``tests/admin/test_policy.py`` walks the URL map and fails on
any admin endpoint missing here, and on any listed endpoint that no route has;
``tests/admin/test_roles.py`` walks every route as each role.
"""

from __future__ import annotations

from app.auth.permissions import Permission

POLICY: dict[str, Permission] = {
    # inquiries (app.admin.inbox, spam, attachments, workflow, replies, actions, export)
    "admin.inbox": Permission.READ,  # GET  /admin/
    "admin.spam": Permission.READ,  # GET  /admin/spam
    "admin.overview": Permission.READ,  # GET  /admin/overview (the forms this admin may read)
    "admin.dismiss_start": Permission.SETTINGS,  # POST /admin/overview/start/dismiss (owners: the checklist)
    "admin.restore_start": Permission.SETTINGS,  # POST /admin/overview/start/restore
    "admin.detail": Permission.READ,  # GET  /admin/inquiries/<id> (records this admin's opening)
    "admin.download_file": Permission.READ,  # GET  /admin/inquiries/<id>/files/<file>
    "admin.preview_file": Permission.READ,  # GET  /admin/inquiries/<id>/files/<file>/preview
    "admin.mark_read": Permission.MARK,  # POST /admin/inquiries/<id>/read (this admin's own mark)
    "admin.mark_unread": Permission.MARK,  # POST /admin/inquiries/<id>/unread (this admin's own mark)
    "admin.mark_answered": Permission.ANSWER,  # POST /admin/inquiries/<id>/answered
    "admin.mark_unanswered": Permission.ANSWER,  # POST /admin/inquiries/<id>/unanswered
    "admin.send_reply": Permission.ANSWER,  # POST /admin/inquiries/<id>/reply
    "admin.reply_states": Permission.READ,  # GET  /admin/inquiries/<id>/replies.json (as the detail page)
    "admin.not_spam": Permission.TRIAGE,  # POST /admin/spam/not-spam
    "admin.change_state": Permission.TRIAGE,  # POST /admin/inquiries/<id>/state
    "admin.assign": Permission.TRIAGE,  # POST /admin/inquiries/<id>/assign
    "admin.change_tags": Permission.TRIAGE,  # POST /admin/inquiries/<id>/tags
    "admin.add_note": Permission.TRIAGE,  # POST /admin/inquiries/<id>/notes
    "admin.mark_spam": Permission.TRIAGE,  # POST /admin/spam/mark
    "admin.change_spam_words": Permission.SETTINGS,  # POST /admin/spam/words
    "admin.place_hold": Permission.HOLD,  # POST /admin/inquiries/<id>/hold
    "admin.release_hold": Permission.HOLD,  # POST /admin/inquiries/<id>/release
    "admin.delete_inquiries": Permission.DELETE,  # POST /admin/inquiries/delete
    "admin.delete_all_spam": Permission.DELETE,  # POST /admin/spam/delete-all
    "admin.export": Permission.EXPORT,  # GET  /admin/export.csv
    # people (app.admin.people)
    "admin.people": Permission.PEOPLE,  # GET  /admin/people
    "admin.person_export_json": Permission.PEOPLE,  # GET  /admin/people/export.json
    "admin.person_export_csv": Permission.PEOPLE,  # GET  /admin/people/export.csv
    "admin.person_export_zip": Permission.PEOPLE,  # GET  /admin/people/export.zip
    "admin.person_erase": Permission.ERASE,  # POST /admin/people/erase
    # forms (app.admin.forms)
    "admin.forms": Permission.FORMS,  # GET  /admin/forms
    "admin.new_form": Permission.FORMS,  # GET  /admin/forms/new
    "admin.create_form": Permission.FORMS,  # POST /admin/forms/new
    "admin.edit_form": Permission.FORMS,  # GET  /admin/forms/<id>
    "admin.change_form": Permission.FORMS,  # POST /admin/forms/<id>
    "admin.preview_form": Permission.FORMS,  # POST /admin/forms/preview (the editor's live preview)
    "admin.delete_form": Permission.FORMS,  # POST /admin/forms/<id>/delete
    # tags (app.admin.tags)
    "admin.tags": Permission.TAGS,  # GET  /admin/tags
    "admin.create_tag": Permission.TAGS,  # POST /admin/tags
    "admin.delete_tag": Permission.TAGS,  # POST /admin/tags/<id>/delete
    "admin.allow_site": Permission.FORMS,  # POST /admin/forms/<id>/allow-site
    # site settings (app.admin.retention, notifications, cleanup)
    "admin.settings_moved": Permission.SETTINGS,  # GET  /admin/settings (redirect)
    "admin.retention_page": Permission.SETTINGS,  # GET  /admin/retention
    "admin.change_retention": Permission.SETTINGS,  # POST /admin/retention
    "admin.change_spam_retention": Permission.SETTINGS,  # POST /admin/retention/spam
    "admin.change_retention_summary": Permission.SETTINGS,  # POST /admin/retention/summary
    "admin.retention_report": Permission.SETTINGS,  # GET  /admin/retention/report (owners: evidence)
    "admin.retention_report_csv": Permission.SETTINGS,  # GET  /admin/retention/report.csv
    "admin.retention_report_json": Permission.SETTINGS,  # GET  /admin/retention/report.json
    "admin.retention_forecast": Permission.SETTINGS,  # GET  /admin/retention/forecast.json
    "admin.notifications": Permission.SETTINGS,  # GET  /admin/notifications
    "admin.change_notifications": Permission.SETTINGS,  # POST /admin/notifications
    "admin.rotate_secret": Permission.SETTINGS,  # POST /admin/notifications/secret
    "admin.send_test": Permission.SETTINGS,  # POST /admin/notifications/test
    "admin.change_chat": Permission.SETTINGS,  # POST /admin/notifications/chat (app.admin.chat)
    "admin.send_again": Permission.SETTINGS,  # POST /admin/notifications/deliveries/<id>/again
    "admin.cleanup_page": Permission.SETTINGS,  # GET  /admin/cleanup (the ledger and the audit log)
    "admin.run_cleanup": Permission.SETTINGS,  # POST /admin/cleanup/run
    # e-mails held apart (app.admin.held): whoever manages the site's settings
    "admin.held_messages": Permission.SETTINGS,  # GET  /admin/held
    "admin.thread_held": Permission.SETTINGS,  # POST /admin/held/<id>/thread
    "admin.delete_held": Permission.SETTINGS,  # POST /admin/held/<id>/delete
    "admin.download_held_file": Permission.SETTINGS,  # GET  /admin/held/<id>/files/<file>
    # admins (app.admin.admins, account)
    "admin.admins": Permission.ADMINS,  # GET  /admin/admins
    "admin.change_role": Permission.ADMINS,  # POST /admin/admins/<id>/role
    "admin.log_out_everywhere": Permission.ADMINS,  # POST /admin/admins/<id>/logout
    "admin.remove_admin": Permission.ADMINS,  # POST /admin/admins/<id>/remove
    "admin.invite": Permission.ADMINS,  # POST /admin/account/invite
    # one's own account (app.admin.account)
    "admin.account": Permission.ACCOUNT,  # GET  /admin/account
    "admin.change_email": Permission.ACCOUNT,  # POST /admin/account/email
    "admin.change_name": Permission.ACCOUNT,  # POST /admin/account/name
    "admin.change_language": Permission.ACCOUNT,  # POST /admin/account/language
    "admin.revoke_login": Permission.ACCOUNT,  # POST /admin/account/sessions/<id>/revoke
    "admin.rename_passkey": Permission.ACCOUNT,  # POST /admin/account/passkeys/<id>/rename
    "admin.remove_passkey": Permission.ACCOUNT,  # POST /admin/account/passkeys/<id>/remove
}

# What keeps an account needs a passkey verified in the last five minutes as well (``logins.freshly_verified``;
# adding a passkey, under /auth, asks in ``app.auth.enroll``).
STEP_UP: frozenset[str] = frozenset(
    {
        "admin.change_role",
        "admin.log_out_everywhere",
        "admin.remove_admin",
        "admin.invite",
        "admin.change_email",
        "admin.remove_passkey",
    }
)


def required(endpoint: str | None) -> Permission | None:
    """The permission ``endpoint`` needs; None when it is not listed (the guard then refuses)."""
    return POLICY.get(endpoint or "")
