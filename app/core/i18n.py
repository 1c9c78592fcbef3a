"""Languages: English, Japanese and Simplified Chinese through gettext catalogs.

Every user-visible string goes through ``gettext`` (``_`` in templates and
code, ``ngettext`` where a count appears); the catalogs live in
``app/translations`` and are compiled by ``make``. Operator CLI output stays
English.

The locale of a request, first found wins:

1. the ``lang`` cookie, set by the language switch in every page's footer;
2. the logged-in admin's choice on the Account page (``admins.locale``);
3. the browser's ``Accept-Language``, best match;
4. ``DEFAULT_LOCALE`` (also what a request without ``Accept-Language``
   gets, e.g. a JSON API client).

Times are shown in ``TIME_ZONE`` with each language's date pattern, numbers
with its digit grouping (Babel's CLDR data).
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from babel.dates import format_datetime
from flask import Blueprint, Flask, current_app, g, has_request_context, jsonify, redirect, request, url_for
from flask_babel import Babel, force_locale, format_number, get_locale, gettext, ngettext

from app.core.urls import safe_next  # the same rule as after login

LOCALES = ("en", "ja", "zh_Hans")  # catalog names; a page says zh-Hans (BCP 47)
NAMES = {"en": "English", "ja": "日本語", "zh_Hans": "简体中文"}  # each in its own language
COOKIE = "lang"
COOKIE_MAX_AGE = 365 * 24 * 3600

bp = Blueprint("i18n", __name__)


def N_(message: str) -> str:
    """Mark ``message`` for the catalog without translating it yet (translated per request)."""
    return message


# The messages static/passkey.js shows, keyed by their English text (the
# script falls back to that key). {status} is filled in by the script.
SCRIPT_MESSAGES = (
    N_("The server answered {status}. Please try again."),
    N_("The passkey request was cancelled or timed out. You can try again."),
    N_("This passkey is already registered here."),
    N_("This page's address does not match the site's passkey settings."),
    N_("Something went wrong. Please try again."),
    N_("Waiting for your passkey…"),
    N_("Follow your browser's prompts to create a passkey…"),
    N_("Logged in."),
    N_("Passkey created."),
    N_("This browser does not support passkeys. Please use a current browser."),
)


def init_app(app: Flask) -> None:
    """Install gettext, the locale selector and the switch (its filters: ``app.templating``)."""
    Babel(
        app,
        locale_selector=select_locale,
        default_locale=app.config["DEFAULT_LOCALE"],
        default_timezone=app.config["TIME_ZONE"],
    )
    app.register_blueprint(bp)


def normalize(value: object) -> str | None:
    """The catalog name for ``value`` (``ja``, ``zh-Hans``, ``zh_hans``...), or None if unsupported."""
    if not isinstance(value, str):
        return None
    wanted = value.strip().replace("-", "_").lower()
    return next((name for name in LOCALES if name.lower() == wanted), None)


def from_accept_language(header_values) -> str | None:
    """The best supported locale for an ``Accept-Language`` list, highest quality first.

    ``zh``, ``zh-CN``, ``zh-SG`` and ``zh-Hans`` read Simplified Chinese;
    ``zh-TW``, ``zh-HK`` and ``zh-Hant`` (Traditional) are not offered it.
    """
    for tag, quality in header_values:
        if quality <= 0:  # q=0: "not this one"
            continue
        parts = tag.lower().replace("_", "-").split("-")
        if parts[0] == "zh":
            if not {"hant", "tw", "hk", "mo"} & set(parts[1:]):
                return "zh_Hans"
        elif parts[0] in ("en", "ja"):
            return parts[0]
    return None


def select_locale() -> str:
    """This request's locale: cookie, the admin's choice, ``Accept-Language``, the default."""
    if not has_request_context():  # e.g. a notification sent after the response
        return current_app.config["DEFAULT_LOCALE"]
    chosen = normalize(request.cookies.get(COOKIE))
    if chosen:
        return chosen
    # Only an admin the login guard has already loaded: a visitor's page never
    # queries the database for this, and an error page never fails on it.
    admin = g.get("_login_user")
    if admin is not None and (locale := normalize(getattr(admin, "locale", None))):
        return locale
    return from_accept_language(request.accept_languages) or current_app.config["DEFAULT_LOCALE"]


def language_tag(locale: str | None = None) -> str:
    """The BCP 47 tag for ``<html lang>``: ``en``, ``ja``, ``zh-Hans``."""
    return (locale or str(get_locale())).replace("_", "-")


def page_language() -> dict:
    """Every page's language: its tag and locale, the language links, the scripts' messages."""
    return {
        "page_lang": language_tag(),
        "page_locale": str(get_locale()),
        "languages": [(name, NAMES[name], language_tag(name)) for name in LOCALES],
        "script_messages": script_messages,
    }


def script_messages() -> dict[str, str]:
    """The scripts' messages in this request's locale, keyed by their English text."""
    return {message: gettext(message) for message in SCRIPT_MESSAGES}


@bp.get("/language/<locale>")
def switch(locale: str):
    """Remember a visitor's language in the ``lang`` cookie and go back to ``next``.

    A plain link, so it works without JavaScript; choosing a language
    changes no data, so GET is right here.
    """
    chosen = normalize(locale)
    response = redirect(safe_next(request.args.get("next")) or url_for("public.inquiry_form"), 303)
    if chosen:
        remember(response, chosen)
    return response


def remember(response, locale: str | None) -> None:
    """Set (or, for None, clear) the ``lang`` cookie on ``response``."""
    secure = current_app.config["ORIGIN"].startswith("https://")
    if locale is None:
        response.delete_cookie(COOKIE, secure=secure, samesite="Lax")
    else:
        response.set_cookie(COOKIE, locale, max_age=COOKIE_MAX_AGE, secure=secure, samesite="Lax", httponly=True)


@bp.get("/i18n/<locale>.json")
def script_catalog(locale: str):
    """The scripts' messages in ``locale`` as JSON (what ``data-messages`` on each page holds)."""
    chosen = normalize(locale)
    if chosen is None:
        return jsonify(ok=False, error=gettext("No such language.")), 404
    with force_locale(chosen):
        messages = script_messages()
    response = jsonify(messages)
    response.headers["Cache-Control"] = "public, max-age=3600"
    return response


def _zone() -> ZoneInfo:
    return ZoneInfo(current_app.config["TIME_ZONE"])


def local_time(moment: datetime | None) -> str:
    """``moment`` in ``TIME_ZONE``: ``2026-06-01 14:00 CEST``, ``2026年6月1日 14:00 JST``."""
    if moment is None:
        return "—"
    return f"{local_datetime(moment)} {moment.astimezone(_zone()).strftime('%Z')}"


def local_datetime(moment: datetime) -> str:
    """``moment`` in ``TIME_ZONE`` without the zone: ``2026-06-01 14:00``, ``2026年6月1日 14:00``."""
    # Translators: a CLDR date-time pattern (y year, M month, d day, HH hour, mm minute).
    pattern = gettext("yyyy-MM-dd HH:mm")
    return format_datetime(moment.astimezone(_zone()), pattern, tzinfo=_zone(), locale=get_locale())


def local_date(moment: datetime | None) -> str:
    """The calendar date of ``moment`` in ``TIME_ZONE``: ``2026-06-01``, ``2026年6月1日``."""
    if moment is None:
        return "—"
    # Translators: a CLDR date pattern (y year, M month, d day).
    return format_datetime(moment, gettext("yyyy-MM-dd"), tzinfo=_zone(), locale=get_locale())


def number(value: int | float) -> str:
    """``value`` with the locale's digit grouping."""
    return format_number(value)


def days(count: int) -> str:
    """``1 day``, ``N days``; ``N日`` in Japanese, ``N天`` in Chinese."""
    return ngettext("%(num)s day", "%(num)s days", count)
