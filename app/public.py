"""The public side: the inquiry form, the JSON API, privacy and health pages."""

from __future__ import annotations

from flask import (
    Blueprint,
    current_app,
    jsonify,
    redirect,
    render_template,
    request,
    url_for,
)
from sqlalchemy import select
from werkzeug.exceptions import BadRequest, Forbidden, UnsupportedMediaType

from app import cleanup, clock, db, migrate, ratelimit, retention
from app.models import Inquiry
from app.security import csrf
from app.validation import validate_inquiry

bp = Blueprint("public", __name__)

HONEYPOT = "website"


@bp.get("/")
def inquiry_form():
    """The inquiry form."""
    return render_template("public/form.html", values={}, errors={})


@bp.post("/")
def submit_form():
    """Save a form inquiry and redirect to the thank-you page, or show the errors (422)."""
    _limit_submissions()
    if request.form.get(HONEYPOT):
        return redirect(url_for("public.thanks"), 303)
    clean, errors = validate_inquiry(request.form)
    if errors:
        values = {field: request.form.get(field, "") for field in ("name", "email", "message")}
        return render_template("public/form.html", values=values, errors=errors), 422
    _save(clean)
    cleanup.trigger("inquiry_form")
    return redirect(url_for("public.thanks"), 303)


@bp.post("/api/inquiries")
@csrf.exempt
def submit_json():
    """Save a JSON inquiry: 201 ``{"ok": true}``, or 422 with an error per field."""
    if not request.is_json:
        raise UnsupportedMediaType("Send the inquiry as JSON (Content-Type: application/json).")
    origin = request.headers.get("Origin")
    if origin is not None and origin not in current_app.config["ORIGINS"]:
        raise Forbidden("Cross-origin requests are not accepted.")
    _limit_submissions()
    data = request.get_json(silent=True)
    if data is None:
        raise BadRequest("The request body is not valid JSON.")
    if not isinstance(data, dict):
        return jsonify(ok=False, errors={"_": "Send a JSON object."}), 422
    if data.get(HONEYPOT):
        return jsonify(ok=True), 201
    clean, errors = validate_inquiry(data)
    if errors:
        return jsonify(ok=False, errors=errors), 422
    _save(clean)
    cleanup.trigger("inquiry_api")
    return jsonify(ok=True), 201


@bp.get("/thanks")
def thanks():
    """The page shown after a successful submission."""
    return render_template("public/thanks.html")


@bp.get("/privacy")
def privacy():
    """How long inquiries are kept, in plain words."""
    days = retention.retention_days(db.get_session())
    return render_template("public/privacy.html", retention_days=days)


@bp.get("/healthz")
def healthz():
    """200 when the database answers and is migrated to head; 503 otherwise."""
    checks = {"database": False, "migrations": False}
    try:
        with db.get_engine().connect() as connection:
            connection.execute(select(1))
        checks["database"] = True
        checks["migrations"] = migrate.current_revision(db.get_engine()) == migrate.head_revision()
    except Exception:  # noqa: BLE001 - any failure means "not healthy"
        current_app.logger.warning("health check failed", exc_info=True)
    healthy = all(checks.values())
    return jsonify(ok=healthy, **checks), 200 if healthy else 503


def _limit_submissions() -> None:
    limits = ratelimit.parse_limits(current_app.config["SUBMIT_RATE_LIMITS"])
    ratelimit.enforce("submit", ratelimit.client_id(), limits)


def _save(clean: dict[str, str]) -> None:
    session = db.get_session()
    agent = request.user_agent.string[:300] or None
    session.add(Inquiry(**clean, user_agent=agent, created_at=clock.now()))
    session.commit()

