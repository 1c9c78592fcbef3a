"""A throwaway IMAP server (Dovecot from Debian's packages) on 127.0.0.1, for tests and the e2e path.

Dovecot runs in the foreground from a configuration of its own in a
temporary folder: IMAP with STARTTLS and IMAPS on loopback ports, one user
(``USER``/``PASSWORD``), Maildir storage, TLS from a ``Certificate`` of
``devtools.receivers`` (which the app trusts through ``SUNDOWN_IMAP_CA_FILE``).
Dovecot never gives mail access to uid 0, so the mail processes run as its
own ``dovecot`` user, which owns the folder.

``SmtpToImap`` is the other half of a person's answer: a real SMTP server
(aiosmtpd) that delivers every message it accepts into the IMAP mailbox,
as a mail server with local delivery does.
"""

from __future__ import annotations

import imaplib
import os
import pwd
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
from pathlib import Path

from aiosmtpd.controller import Controller

from devtools.receivers import LOOPBACK, Certificate, free_port

USER, PASSWORD = "replies", "imap-password"
DOVECOT = "/usr/sbin/dovecot"
MAIL_USER = "dovecot"

CONFIG = """\
base_dir = {root}/run
state_dir = {root}/state
log_path = {root}/dovecot.log
info_log_path = {root}/dovecot.log
protocols = imap
listen = {host}
ssl = required
ssl_cert = <{cert}
ssl_key = <{key}
disable_plaintext_auth = yes
auth_mechanisms = plain login
mail_location = maildir:{root}/mail/%u
first_valid_uid = 1
default_internal_user = dovecot
default_login_user = dovenull
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {root}/users
}}
userdb {{
  driver = static
  args = uid={uid} gid={gid} home={root}/mail/%u
}}
service imap-login {{
  inet_listener imap {{
    address = {host}
    port = {port}
  }}
  inet_listener imaps {{
    address = {host}
    port = {tls_port}
    ssl = yes
  }}
}}
service stats {{
  unix_listener stats-writer {{
    mode = 0666
  }}
}}
"""


def available() -> bool:
    """Whether Dovecot is installed here (``apt-get install dovecot-imapd``)."""
    return os.path.exists(DOVECOT)


class ImapServer:
    """Start with ``start()``, stop with ``stop()``; ``url`` is its ``SUNDOWN_IMAP_URL`` (IMAPS)."""

    def __init__(self, certificate: Certificate) -> None:
        self.certificate = certificate
        self.port, self.tls_port = free_port(), free_port()
        self.root = Path(tempfile.mkdtemp(prefix="sundown-imap-"))
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        """``imaps://`` this server's user and port."""
        return f"imaps://{USER}:{PASSWORD}@{LOOPBACK}:{self.tls_port}/INBOX"

    @property
    def starttls_url(self) -> str:
        """``imap+starttls://`` this server's user and port."""
        return f"imap+starttls://{USER}:{PASSWORD}@{LOOPBACK}:{self.port}/INBOX"

    def start(self) -> ImapServer:
        """Write the configuration and run Dovecot until its port answers."""
        account = pwd.getpwnam(MAIL_USER)
        for folder in ("run", "state", "mail"):
            (self.root / folder).mkdir()
        (self.root / "users").write_text(f"{USER}:{{PLAIN}}{PASSWORD}\n")
        config = self.root / "dovecot.conf"
        config.write_text(
            CONFIG.format(
                root=self.root,
                host=LOOPBACK,
                cert=self.certificate.cert,
                key=self.certificate.key,
                uid=account.pw_uid,
                gid=account.pw_gid,
                port=self.port,
                tls_port=self.tls_port,
            )
        )
        if os.geteuid() == 0:
            shutil.chown(self.root / "mail", MAIL_USER, MAIL_USER)
            self.root.chmod(0o755)
        self.process = subprocess.Popen(
            [DOVECOT, "-F", "-c", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        self._wait_ready()
        return self

    def _wait_ready(self, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"dovecot exited: {self.process.stderr.read().decode()} {self.log()}")
            try:
                with socket.create_connection((LOOPBACK, self.tls_port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"dovecot did not listen in time: {self.log()}")

    def log(self) -> str:
        """Dovecot's log so far."""
        path = self.root / "dovecot.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        """Stop Dovecot and remove its folder."""
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process.stderr.close()
            self.process = None
        shutil.rmtree(self.root, ignore_errors=True)

    def connect(self) -> imaplib.IMAP4_SSL:
        """A logged-in client on the mailbox, trusting the test certificate."""
        context = ssl.create_default_context(cafile=str(self.certificate.cert))
        client = imaplib.IMAP4_SSL(LOOPBACK, self.tls_port, ssl_context=context, timeout=10)
        client.login(USER, PASSWORD)
        client.select("INBOX")
        return client

    def append(self, raw: bytes) -> None:
        """Put one message in the mailbox, as local delivery does."""
        client = self.connect()
        try:
            client.append("INBOX", None, None, raw)
        finally:
            client.logout()

    def count(self) -> int:
        """How many messages the mailbox holds (expunged ones gone)."""
        client = self.connect()
        try:
            _status, data = client.search(None, "ALL")
            return len(data[0].split())
        finally:
            client.logout()


class _Deliver:
    """aiosmtpd's handler: every accepted message into the IMAP mailbox."""

    def __init__(self, imap: ImapServer) -> None:
        self.imap = imap

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 - aiosmtpd's name
        self.imap.append(bytes(envelope.original_content or envelope.content))
        return "250 Message accepted for delivery"


class SmtpToImap:
    """A plain SMTP server on loopback that delivers into ``imap``: where a person's answer is sent."""

    def __init__(self, imap: ImapServer) -> None:
        self.port = free_port()
        self.controller = Controller(_Deliver(imap), hostname=LOOPBACK, port=self.port, ready_timeout=10)

    def start(self) -> SmtpToImap:
        """Listen."""
        self.controller.start()
        return self

    def stop(self) -> None:
        """Stop listening."""
        self.controller.stop()
