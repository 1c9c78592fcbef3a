"""Real receivers for notifications, on loopback, for tests and benchmarks: an SMTP server (aiosmtpd)
and a webhook endpoint.

* ``Certificate``: a self-signed certificate for 127.0.0.1 made with
  ``cryptography``, which the app trusts through ``SUNDOWN_SMTP_CA_FILE``.
* ``MailServer``: aiosmtpd with STARTTLS required and AUTH (one user); it can
  be down (stopped, the port refusing connections) and started again on the
  same port, and refuse chosen recipients with a 550.
* ``WebhookReceiver``: an HTTP server that checks every request's signature
  with ``standardwebhooks``, answers with a chosen status, or hangs.
* ``ApiReceiver``: an HTTP server standing in for a chat service's API
  (Slack, Discord, Teams, Telegram, Matrix, ntfy): it keeps each request's
  method, path, headers and JSON, and answers with a chosen status and
  ``Retry-After``; a ``GET`` says how many requests it answered and when
  the last arrived (a benchmark's look from another process).
"""

from __future__ import annotations

import datetime as dt
import email
import json
import socket
import ssl
import threading
import time
from dataclasses import dataclass, field
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

USER, PASSWORD = "sundown", "mail-password"
LOOPBACK = "127.0.0.1"


def free_port() -> int:
    """A port on loopback that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        return probe.getsockname()[1]


@dataclass
class Certificate:
    """A self-signed certificate for 127.0.0.1 and localhost: ``cert`` (also the CA file) and ``key``."""

    cert: Path
    key: Path

    @classmethod
    def make(cls, directory: Path) -> Certificate:
        """Generate the key and certificate into ``directory``."""
        import ipaddress

        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Sundown test mail")])
        now = dt.datetime.now(dt.UTC)
        certificate = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(days=1))
            .not_valid_after(now + dt.timedelta(days=30))
            .add_extension(
                x509.SubjectAlternativeName(
                    [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address(LOOPBACK))]
                ),
                critical=False,
            )
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256())
        )
        made = cls(directory / "mail-cert.pem", directory / "mail-key.pem")
        made.cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
        made.key.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        return made


class _Mailbox:
    """aiosmtpd's handler: refuses ``refused`` recipients, keeps every message it accepts."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.peers: list[tuple[str, int]] = []  # the client's address of each message: one per connection
        self.envelopes: list[tuple[list[str], bytes]] = []  # each message's envelope recipients and its bytes
        self.refused: set[str] = set()
        self.refuse_next = 0  # refuse this many recipients from now, whoever they are
        self.lock = threading.Lock()

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):  # noqa: N802 - aiosmtpd's name
        if address in self.refused or self.refuse_next > 0:
            self.refuse_next = max(0, self.refuse_next - 1)
            return "550 5.1.1 No such user"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):  # noqa: N802
        with self.lock:
            self.messages.append(email.message_from_bytes(envelope.content))
            self.peers.append(tuple(session.peer))
            self.envelopes.append((list(envelope.rcpt_tos), bytes(envelope.original_content or envelope.content)))
        return "250 Message accepted"


def _authenticate(server, session, envelope, mechanism, auth_data) -> AuthResult:
    ok = isinstance(auth_data, LoginPassword) and (auth_data.login, auth_data.password) == (
        USER.encode(),
        PASSWORD.encode(),
    )
    return AuthResult(success=ok)


class MailServer:
    """aiosmtpd on a fixed loopback port; ``start``/``stop`` at will.

    With a certificate: STARTTLS required and AUTH. Without: plain SMTP, as
    a relay on the same host is (``smtp://``).
    """

    def __init__(self, certificate: Certificate | None, port: int | None = None) -> None:
        self.port = port or free_port()
        self.mailbox = _Mailbox()
        self.tls = None
        if certificate is not None:
            self.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.tls.load_cert_chain(certificate.cert, certificate.key)
        self.controller: Controller | None = None

    @property
    def url(self) -> str:
        """The ``SUNDOWN_SMTP_URL`` of this server."""
        if self.tls is None:
            return f"smtp://{LOOPBACK}:{self.port}"
        return f"smtp+starttls://{USER}:{PASSWORD}@{LOOPBACK}:{self.port}"

    @property
    def messages(self) -> list[Message]:
        """The messages accepted so far."""
        with self.mailbox.lock:
            return list(self.mailbox.messages)

    @property
    def envelopes(self) -> list[tuple[list[str], bytes]]:
        """Each accepted message's envelope recipients (``RCPT TO``) and the bytes that arrived."""
        with self.mailbox.lock:
            return list(self.mailbox.envelopes)

    @property
    def connections(self) -> int:
        """How many connections the accepted messages came on."""
        with self.mailbox.lock:
            return len(set(self.mailbox.peers))

    def start(self) -> MailServer:
        """Listen (again) on the port."""
        secure = (
            {"tls_context": self.tls, "require_starttls": True, "auth_required": True, "authenticator": _authenticate}
            if self.tls
            else {}
        )
        self.controller = Controller(self.mailbox, hostname=LOOPBACK, port=self.port, ready_timeout=10, **secure)
        self.controller.start()
        return self

    def stop(self) -> None:
        """Stop listening: connections to the port are refused."""
        if self.controller is not None:
            self.controller.stop()
            self.controller = None


@dataclass
class Received:
    """One webhook request as the receiver saw it."""

    headers: dict[str, str]
    body: bytes
    signature_ok: bool  # the signature matches the body, id and timestamp (any age)
    verified: bool  # standardwebhooks' full check, the 5-minute timestamp window included

    @property
    def payload(self) -> dict:
        """The JSON body."""
        return json.loads(self.body)


@dataclass
class WebhookReceiver:
    """A real HTTP endpoint on loopback that checks signatures with the secret it is given."""

    secret: str
    status: int = 204
    hang_seconds: float = 0.0
    close_quietly: bool = False  # close each connection after its answer without saying so (an idle timeout)
    received: list[Received] = field(default_factory=list)
    peers: list[tuple[str, int]] = field(default_factory=list)  # the client's address of each request
    port: int = 0

    def start(self) -> WebhookReceiver:
        """Serve in a thread."""
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as receivers on the web are

            def do_POST(self):  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if receiver.hang_seconds:
                    time.sleep(receiver.hang_seconds)
                receiver.received.append(receiver.check(dict(self.headers.items()), body))
                receiver.peers.append(self.client_address)
                self.send_response(receiver.status)
                self.send_header("Content-Length", "0")
                self.end_headers()
                self.close_connection = receiver.close_quietly

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer((LOOPBACK, self.port), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    @property
    def url(self) -> str:
        """Where to send."""
        return f"http://{LOOPBACK}:{self.server.server_address[1]}/hooks/sundown"

    @property
    def envelopes(self) -> list[tuple[list[str], bytes]]:
        """Each accepted message's envelope recipients (``RCPT TO``) and the bytes that arrived."""
        with self.mailbox.lock:
            return list(self.mailbox.envelopes)

    @property
    def connections(self) -> int:
        """How many connections the requests came on."""
        return len(set(self.peers))

    def check(self, headers: dict[str, str], body: bytes) -> Received:
        """Check the signature as a receiver would (``standardwebhooks``)."""
        lower = {key.lower(): value for key, value in headers.items()}
        hook = Webhook(self.secret)
        try:
            hook.verify(body, lower)
            verified = True
        except WebhookVerificationError:
            verified = False
        try:
            signed_at = dt.datetime.fromtimestamp(int(lower["webhook-timestamp"]), dt.UTC)
            expected = hook.sign(lower["webhook-id"], signed_at, body.decode()).split(",", 1)[1]
            signature_ok = any(part.split(",", 1)[-1] == expected for part in lower["webhook-signature"].split())
        except (KeyError, ValueError):
            signature_ok = False
        return Received(lower, body, signature_ok, verified)

    def stop(self) -> None:
        """Stop serving."""
        self.server.shutdown()
        self.server.server_close()


@dataclass
class ApiCall:
    """One request to an ``ApiReceiver``."""

    method: str
    path: str
    headers: dict[str, str]  # names lowercased
    body: bytes

    @property
    def payload(self) -> dict:
        """The JSON body."""
        return json.loads(self.body)


@dataclass
class ApiReceiver:
    """A real HTTP server on loopback answering every ``POST`` and ``PUT`` as a chat service's API might."""

    status: int = 200
    retry_after: str | None = None  # sent with every answer when set (a 429's)
    answer: bytes = b"{}"
    calls: list[ApiCall] = field(default_factory=list)
    port: int = 0  # 0: any free port
    keep_calls: bool = True  # a benchmark's receiver keeps none
    counted: int = 0  # requests answered, kept or not
    last_at: float = 0.0  # time.time() of the last one's arrival

    def start(self) -> ApiReceiver:
        """Serve in a thread."""
        receiver, lock = self, threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _record(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with lock:
                    receiver.counted += 1
                    receiver.last_at = time.time()
                headers = {key.lower(): value for key, value in self.headers.items()}
                if receiver.keep_calls:
                    receiver.calls.append(ApiCall(self.command, self.path, headers, body))
                self.send_response(receiver.status)
                if receiver.retry_after is not None:
                    self.send_header("Retry-After", receiver.retry_after)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(receiver.answer)))
                self.end_headers()
                self.wfile.write(receiver.answer)

            do_POST = do_PUT = _record  # noqa: N815 - http.server's names

            def do_GET(self):  # noqa: N802 - http.server's name
                """How many requests arrived and when the last did (a benchmark's look from another process)."""
                with lock:
                    answer = json.dumps({"counted": receiver.counted, "last_at": receiver.last_at}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer((LOOPBACK, self.port), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    @property
    def base(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://{LOOPBACK}:{self.server.server_address[1]}"

    def stop(self) -> None:
        """Stop serving."""
        self.server.shutdown()
        self.server.server_close()


def serve_sinks(mail_port: int, hook_port: int, secret: str, api_port: int | None = None) -> None:
    """Run a plain SMTP sink, a webhook receiver and (given its port) a chat services' stand-in until killed
    (a benchmark's separate process)."""
    mail = MailServer(None, port=mail_port).start()
    hook = WebhookReceiver(secret, port=hook_port).start()
    api = ApiReceiver(port=api_port, keep_calls=False).start() if api_port else None
    try:
        threading.Event().wait()
    finally:
        if api is not None:
            api.stop()
        hook.stop()
        mail.stop()


if __name__ == "__main__":
    import sys

    serve_sinks(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else None)
