"""An inquiry's files for admins: downloaded as attachments, images previewed as images only.

Logged-in admins only (the blueprint's guard), and only a file of an
inquiry they may see (``get_inquiry_or_404``: in a folder, not past
retention). A file's bytes are whatever a visitor sent, so the browser is
never asked to run them: a download is ``attachment``, an inline preview
is offered only for image formats (``rules.PREVIEWED``, no SVG), and both
carry ``nosniff`` and a CSP of ``default-src 'none'; sandbox``, so even a
file opened directly runs no script and reaches nothing.
"""

from __future__ import annotations

from flask import Response, abort
from flask_babel import gettext as _
from flask_login import current_user

from app.admin import bp
from app.admin.inquiries import get_inquiry_or_404
from app.attachments import rules, store
from app.core import db
from app.inquiries import access
from app.models import AccessKind, Attachment

FILE_POLICY = "default-src 'none'; sandbox"


@bp.get("/inquiries/<int:inquiry_id>/files/<int:attachment_id>")
def download_file(inquiry_id: int, attachment_id: int):
    """File ``attachment_id`` of inquiry ``inquiry_id``, as a download under its display name (recorded as an
    access; a preview is part of the inquiry's page, whose opening is recorded)."""
    attachment = _file_or_404(inquiry_id, attachment_id)
    access.record(current_user, AccessKind.FILE, [inquiry_id])
    return stream_file(attachment, "attachment")


@bp.get("/inquiries/<int:inquiry_id>/files/<int:attachment_id>/preview")
def preview_file(inquiry_id: int, attachment_id: int):
    """An image file shown inline, for the detail page's ``<img>``; 404 for any other type."""
    attachment = _file_or_404(inquiry_id, attachment_id)
    if attachment.content_type not in rules.PREVIEWED:
        abort(404, _("Only images are shown in the page; download this file instead."))
    return stream_file(attachment, "inline")


def _file_or_404(inquiry_id: int, attachment_id: int) -> Attachment:
    get_inquiry_or_404(inquiry_id)
    attachment = store.one(db.get_session(), inquiry_id, attachment_id)
    if attachment is None:
        abort(404, _("This file does not exist or was deleted with its inquiry."))
    return attachment


def stream_file(attachment: Attachment, disposition: str) -> Response:
    """The file's bytes streamed a piece at a time, with headers that keep the browser from running them."""
    response = Response(store.chunks(db.get_engine(), attachment.id), mimetype=attachment.content_type)
    response.headers.update(
        {
            "Content-Disposition": rules.disposition(disposition, attachment.name),
            "Content-Length": str(attachment.size),
            "Content-Security-Policy": FILE_POLICY,
            "X-Content-Type-Options": "nosniff",
            "Cross-Origin-Resource-Policy": "same-origin",
        }
    )
    return response
