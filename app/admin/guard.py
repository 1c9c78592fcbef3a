"""The one guard of every page and action under /admin, and ``can(...)`` for templates.

Before every request whose path is under /admin (the blueprint's routes and
any other: it is an app-wide hook), after ``app.auth``'s own login check:
a live admin login, then the permission the endpoint needs
(``app.admin.policy``), held by that admin (``app.auth.permissions``). An
endpoint the policy does not list is refused like a permission not held
(403, and logged), so a forgotten entry closes a page instead of opening
it. A path the URL map does not know is left to its 404 or 405.

What the views then reach is scoped by the accessors in
``app.admin.inquiries`` (per form); templates ask ``can("inquiries.delete")``
(or ``can("inquiries.answer", inquiry.form_id)``) to hide what the admin
cannot do.
"""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

from flask import abort, render_template, request, url_for
from flask_babel import lazy_gettext as _l
from flask_login import current_user

from app.admin import policy
from app.auth import login_manager, logins, permissions
from app.auth.permissions import Permission
from app.core.urls import safe_next

log = logging.getLogger(__name__)

REFUSED = _l("Your account does not have permission for this page or action.")


def under_admin(path: str) -> bool:
    """Whether ``path`` is the admin area's (``/admin`` or below it)."""
    return path == "/admin" or path.startswith("/admin/")


def check():
    """Refuse a request under /admin without a live login (to the login page) or the permission its endpoint
    needs (403)."""
    if not under_admin(request.path):
        return None
    if not current_user.is_authenticated:
        return login_manager.unauthorized()
    if request.url_rule is None:
        return None  # no such page or method: its 404 or 405 follows
    needed = policy.required(request.endpoint)
    if needed is None:
        log.error(
            "refused %s %s: endpoint %r is not in app.admin.policy", request.method, request.path, request.endpoint
        )
        abort(403, str(REFUSED))
    if not permissions.may(current_user, needed):
        abort(403, str(REFUSED))
    if request.endpoint in policy.STEP_UP and not logins.freshly_verified():
        return step_up()
    return None


def step_up():
    """The page that asks for the passkey again (403): what was asked is not done; it can be done again
    within five minutes of confirming."""
    return render_template("admin/step_up.html", back=_came_from() or url_for("admin.account")), 403


def _came_from() -> str | None:
    """The page of this site the request came from (its path and query), to go back to after confirming."""
    parts = urlsplit(request.referrer or "")
    if parts.netloc != request.host:
        return None
    return safe_next(parts.path + (f"?{parts.query}" if parts.query else ""))


def required() -> Permission:
    """The permission the current request's endpoint needs (the guard has let it through)."""
    needed = policy.required(request.endpoint)
    if needed is None:
        abort(403, str(REFUSED))
    return needed


def may(permission: Permission, form_id: int | None = None) -> bool:
    """Whether the logged-in admin holds ``permission`` (on form ``form_id``, when one is named)."""
    return current_user.is_authenticated and permissions.may(current_user, permission, form_id)


def can(permission: str, form_id: int | None = None) -> bool:
    """The template global ``can("inquiries.delete")``: ``may`` for a permission by its value (an unknown
    value is an error, so a typo in a template cannot hide or show anything silently)."""
    return may(Permission(permission), form_id)
