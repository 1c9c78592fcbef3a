"""Security headers, CSRF protection and the optional proxy fix."""

from __future__ import annotations

from flask import Flask, current_app
from flask_wtf.csrf import CSRFProtect
from werkzeug.middleware.proxy_fix import ProxyFix

csrf = CSRFProtect()

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "worker-src 'self'",  # the form's proof-of-work solver (static/pow-worker.js)
        "img-src 'self' data:",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)

HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=()",
}


def init_app(app: Flask) -> None:
    """Protect forms against CSRF, add security headers, trust proxies only when told."""
    csrf.init_app(app)
    app.after_request(_add_security_headers)
    hops = int(app.config["PROXY_FIX"])
    if hops:
        # Flask's documented way to wrap its WSGI app; mypy forbids assigning to a method.
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=hops, x_proto=hops, x_host=hops)  # type: ignore[method-assign]


def _add_security_headers(response):
    for name, value in HEADERS.items():
        response.headers.setdefault(name, value)
    if current_app.config["ORIGIN"].startswith("https://"):
        response.headers.setdefault("Strict-Transport-Security", "max-age=31536000")
    return response
