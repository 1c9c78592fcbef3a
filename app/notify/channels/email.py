"""The e-mail channel, through the standard library: ``smtplib`` and ``EmailMessage``, TLS verified.

``smtps://`` speaks TLS from the start, ``smtp+starttls://`` upgrades with
STARTTLS (and refuses a server that does not offer it); both verify the
server's certificate against the system's CAs, or ``SUNDOWN_SMTP_CA_FILE``
(a private relay's own CA). ``smtp://`` is plain, for a relay on the same
host or network. A batch's e-mails share one connection (``Relay``), the
replies' (``app.replies``) included.
"""

from __future__ import annotations

import functools
import smtplib
import ssl
from datetime import datetime
from email.headerregistry import HeaderRegistry
from email.message import EmailMessage
from email.policy import default
from email.utils import format_datetime
from urllib.parse import urlsplit

from flask import current_app
from flask_babel import lazy_gettext as _l

from app.core.parsing import SmtpServer, parse_smtp_url
from app.models import DeliveryChannel
from app.notify.message import Notice, subject, text_body
from app.notify.settings import Notifications
from app.outbox.handlers import Batch
from app.outbox.store import Outcome

TIMEOUT = 10.0  # seconds per SMTP operation


class _HeaderClasses(HeaderRegistry):
    """The standard library's header registry, each header class made once per process.

    ``HeaderRegistry`` makes a new class for every header it parses: nine
    per e-mail, a large share of the time it took to build one (figures:
    docs/benchmarks.md, "Figures behind the code"). The headers and the
    bytes sent are the same.
    """

    def __init__(self) -> None:
        super().__init__()
        self._made: dict[str, type] = {}

    def __getitem__(self, name: str) -> type:
        key = name.lower()
        made = self._made.get(key)
        if made is None:
            made = self._made[key] = super().__getitem__(name)
        return made


POLICY = default.clone(header_factory=_HeaderClasses())


def build(notice: Notice, recipients: list[str], now) -> EmailMessage:
    """The e-mail for ``notice``; its ``Message-ID`` is the delivery's idempotency key."""
    config = current_app.config
    message = EmailMessage(policy=POLICY)
    host = urlsplit(config["ORIGIN"]).hostname or "localhost"
    message["From"] = config["MAIL_FROM"] or f"sundown@{host}"
    message["To"] = ", ".join(recipients)
    message["Subject"] = subject(notice)
    message["Date"] = format_datetime(now)
    message["Message-ID"] = f"<{notice.delivery.idempotency_key}@{host}>"
    if notice.include_content and notice.inquiry is not None:
        message["Reply-To"] = notice.inquiry.email
    message.set_content(text_body(notice))
    return message


class Relay:
    """One SMTP connection for the e-mails of a pass: opened at the first, reused for the next.

    After any failure but refused recipients (which leave the session usable:
    ``smtplib`` resets it) the connection is dropped, and the next e-mail
    opens a new one.
    """

    def __init__(self) -> None:
        self._server = parse_smtp_url(current_app.config["SMTP_URL"])
        self._smtp: smtplib.SMTP | None = None

    def __enter__(self) -> Relay:
        return self

    def __exit__(self, *_exc) -> None:
        self.close()

    def send(self, message: EmailMessage) -> Outcome:
        """Hand ``message`` over; the outcome, with a reason free of personal data."""
        try:
            refused = self._connected().send_message(message)
        except smtplib.SMTPRecipientsRefused as error:
            return Outcome(f"SMTP refused all {len(error.recipients)} recipients")
        except smtplib.SMTPResponseException as error:
            self.close()
            return Outcome(f"SMTP {error.smtp_code}")
        except (smtplib.SMTPException, OSError) as error:
            self.close()
            return Outcome(f"SMTP {type(error).__name__}")
        if refused:
            return Outcome(f"SMTP refused {len(refused)} recipients")
        return Outcome()

    def close(self) -> None:
        """Say QUIT and close, if a connection is open."""
        smtp, self._smtp = self._smtp, None
        if smtp is None:
            return
        try:
            smtp.quit()
        except (smtplib.SMTPException, OSError):
            smtp.close()

    def _connected(self) -> smtplib.SMTP:
        if self._smtp is None:
            smtp = _connect(self._server)
            try:
                if self._server.username:
                    smtp.login(self._server.username, self._server.password or "")
            except BaseException:
                smtp.close()
                raise
            self._smtp = smtp
        return self._smtp


def _connect(server: SmtpServer) -> smtplib.SMTP:
    # The EHLO name: the origin's host. Left to smtplib, it is socket.getfqdn(),
    # a resolver lookup on every connection, slow next to the rest of a send
    # (figures: docs/benchmarks.md, "Figures behind the code").
    name = urlsplit(current_app.config["ORIGIN"]).hostname or "localhost"
    if server.security == "tls":
        return smtplib.SMTP_SSL(server.host, server.port, timeout=TIMEOUT, context=_tls_context(), local_hostname=name)
    smtp = smtplib.SMTP(server.host, server.port, timeout=TIMEOUT, local_hostname=name)
    try:
        if server.security == "starttls":
            smtp.starttls(context=_tls_context())  # raises SMTPNotSupportedError when not offered
    except BaseException:
        smtp.close()
        raise
    return smtp


def _tls_context() -> ssl.SSLContext:
    """Certificates and host names verified: the system's CAs, or ``SUNDOWN_SMTP_CA_FILE``."""
    return tls_context(current_app.config["SMTP_CA_FILE"])


@functools.lru_cache(maxsize=4)
def tls_context(ca_file: str | None = None) -> ssl.SSLContext:
    """A verifying TLS context, made once per process: loading the CA store is slow next to a send
    (figures: docs/benchmarks.md, "Figures behind the code").

    So a changed ``SUNDOWN_SMTP_CA_FILE`` is read at the next restart, as every setting is.
    """
    return ssl.create_default_context(cafile=ca_file)


def configured() -> bool:
    """Whether an SMTP server is set (the sender defaults to sundown@ the origin's host)."""
    return bool(current_app.config["SMTP_URL"])


class Email:
    """Notifications to the recipients in force (the form's own, else the site's), over the batch's relay."""

    name = DeliveryChannel.EMAIL
    label = _l("E-mail")

    def configured(self, settings: Notifications) -> bool:
        """Whether there are recipients and an SMTP server."""
        return bool(settings.emails) and configured()

    def send(self, notice: Notice, settings: Notifications, now: datetime, batch: Batch) -> Outcome:
        """Hand the notice's e-mail to the batch's relay; the outcome."""
        if not self.configured(settings):
            return Outcome("e-mail not configured")
        return relay_of(batch).send(build(notice, settings.emails, now))


def relay_of(batch: Batch) -> Relay:
    """The batch's one SMTP connection, opened at its first e-mail."""
    return batch.connection(Relay, Relay)


CHANNEL = Email()
