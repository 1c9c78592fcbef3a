"""Typed SQLAlchemy models. Table names are part of the contract.

One file on purpose (about 250 lines): each model is a short table
definition, and reading them side by side shows the whole schema at once.

Timestamps are timezone-aware UTC in Python on both databases; defaults are
callables, never values computed at import.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, ClassVar

from flask_login import UserMixin
from sqlalchemy import (
    JSON,
    Boolean,
    CheckConstraint,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    TypeDecorator,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


def utcnow() -> datetime:
    """The wall clock in UTC; the app's injectable clock is ``app.core.clock.now``."""
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator):
    """A timezone-aware UTC datetime on both databases.

    PostgreSQL stores ``timestamptz``; SQLite stores naive UTC text, which
    sorts and compares correctly because every value is normalised to UTC.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value, dialect):
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given where UTC was expected")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value, dialect):
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


class Base(DeclarativeBase):
    if TYPE_CHECKING:  # each model maps one Table, where DeclarativeBase declares any FromClause
        __table__: ClassVar[Table]

    metadata = MetaData(
        naming_convention={
            "ix": "ix_%(table_name)s_%(column_0_N_name)s",
            "uq": "uq_%(table_name)s_%(column_0_N_name)s",
            "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
            "pk": "pk_%(table_name)s",
        }
    )


class InquiryStatus(StrEnum):
    """Where an inquiry is filed: the inbox, or the spam folder (``app.inquiries.spam`` decides)."""

    INBOX = "inbox"
    SPAM = "spam"


DEFAULT_FORM_ID = 1  # the site's own form, "Contact" (migration 0009): ``/`` and ``POST /api/inquiries``


class Form(Base):
    """A form the public fills in: its questions (``app.forms.fields``), retention and recipients.

    Texts an admin writes are JSON dicts by locale. ``retention_days`` and
    ``spam_retention_days`` are None for the site's default. ``email_field``
    is the key of the one e-mail field People and notifications use.
    """

    __tablename__ = "forms"

    id: Mapped[int] = mapped_column(primary_key=True)
    slug: Mapped[str] = mapped_column(String(60), unique=True)
    title: Mapped[dict] = mapped_column(JSON)
    description: Mapped[dict] = mapped_column(JSON, default=dict)
    fields: Mapped[list] = mapped_column(JSON)
    email_field: Mapped[str | None] = mapped_column(String(40))
    enabled: Mapped[bool] = mapped_column(Boolean, default=True, server_default="1")
    retention_days: Mapped[int | None] = mapped_column(Integer)
    spam_retention_days: Mapped[int | None] = mapped_column(Integer)
    notify_emails: Mapped[list | None] = mapped_column(JSON(none_as_null=True))  # None: SQL NULL, the site's
    webhook_url: Mapped[str | None] = mapped_column(String(500))
    # Chat URLs (``app.core.chaturls``) sent to besides the site's; secrets in them: shown only masked.
    notify_urls: Mapped[list | None] = mapped_column(JSON(none_as_null=True))
    # The owner's sites that may embed it (``app.forms.embed``), and where a plain HTML submission goes after.
    allowed_origins: Mapped[list | None] = mapped_column(JSON(none_as_null=True))
    thanks_url: Mapped[str | None] = mapped_column(String(500))
    # The acknowledgement e-mail to the person who wrote (``app.replies.ack``): off by default; its text by
    # locale (None: the shipped one), with a copy of their message only when the admin chose it.
    ack_enabled: Mapped[bool] = mapped_column(Boolean, default=False, server_default="0")
    ack_include_message: Mapped[bool] = mapped_column(Boolean, default=False, server_default="0")
    ack_texts: Mapped[dict | None] = mapped_column(JSON(none_as_null=True))
    # Where its inquiries' retention counts from (``app.inquiries.retention.Clock``): receipt, the thread's
    # last message, or closing; quoting the person's text to an address that has not written before needs
    # ``ack_quote_new``.
    retention_clock: Mapped[str] = mapped_column(String(16), default="received", server_default="received")
    ack_quote_new: Mapped[bool] = mapped_column(Boolean, default=False, server_default="0")
    # What the cleanup does to its inquiries past their retention (``app.inquiries.retention.Expiry``).
    expiry_action: Mapped[str] = mapped_column(String(16), default="delete", server_default="delete")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Inquiry(Base):
    """An inquiry from the public (table ``submissions``, its name since the first schema).

    Every read and delete filters on ``status`` first, then orders by
    ``(created_at, id)``: one index serves the inbox, the spam view, the
    export and the cleanup of both.
    """

    __tablename__ = "submissions"
    __table_args__ = (
        Index("ix_submissions_status_created_at_id", "status", "created_at", "id"),
        # The People page and erasures find a person's inquiries by their address's lookup key.
        Index("ix_submissions_email_key", "email_key"),
        # The inbox of one form, newest first, and the cleanup of a form with a retention of its own.
        Index("ix_submissions_status_form_id_created_at_id", "status", "form_id", "created_at", "id"),
        # The cleanup's batches: rows anonymised stay past their retention and are never read again.
        Index(
            "ix_submissions_not_anonymised",
            "status",
            "created_at",
            "id",
            sqlite_where=text("anonymised_at IS NULL"),
            postgresql_where=text("anonymised_at IS NULL"),
        ),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(100))
    email: Mapped[str] = mapped_column(String(254))
    # The address case folded in Python at intake (``lookup.key_of``): one key on both databases, where
    # SQLite's lower() folds ASCII letters only (migration 0011).
    email_key: Mapped[str | None] = mapped_column(String(254))
    message: Mapped[str] = mapped_column(Text)
    user_agent: Mapped[str | None] = mapped_column(String(300))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    legal_hold: Mapped[bool] = mapped_column(Boolean, default=False, server_default="0")
    hold_reason: Mapped[str | None] = mapped_column(String(200))
    hold_by: Mapped[str | None] = mapped_column(String(100))
    held_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    status: Mapped[str] = mapped_column(
        String(16), default=InquiryStatus.INBOX, server_default=InquiryStatus.INBOX.value
    )
    # The inbox workflow (app.admin.workflow): answered when marked so. Read or unread is each admin's own
    # (``InquiryView``), so that one admin opening an inquiry changes nothing the others see.
    answered_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    answered_by: Mapped[int | None] = mapped_column(ForeignKey("admins.id", ondelete="SET NULL"))
    # The form it answered (``Form.id``); always set. No foreign key and nullable, as migration 0009 says
    # why: a form is deleted only once it has no inquiries (``app.forms.store.delete``).
    form_id: Mapped[int | None] = mapped_column(Integer)
    # Each field as asked, with its value or the column holding it (``app.forms.answers``); None before 0009.
    answers: Mapped[list | None] = mapped_column(JSON(none_as_null=True))
    # The site it was sent from when embedded there (``app.forms.embed``); None from Sundown's own pages.
    origin: Mapped[str | None] = mapped_column(String(200))
    # The checks that put it in the spam folder (``app.inquiries.spam``); None in the inbox.
    spam_checks: Mapped[list | None] = mapped_column(JSON(none_as_null=True))
    # The thread's last message, the person's or a reply (``app.conversations``); None: none since receipt.
    last_message_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # When it was closed (``app.inquiries.triage``); None while open or waiting, so a form whose retention counts
    # from closing keeps it.
    closed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # When the cleanup anonymised it (``app.cleanup.anonymise``); None for every other inquiry.
    anonymised_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class Setting(Base):
    """A key/value setting: ``retention_days``, ``spam_retention_days``, ``last_cleanup_at`` (the claim, epoch ms)."""

    __tablename__ = "settings"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


class Preference(Base):
    """A choice admins saved (the Notifications page's), read by every process at most once a second: kept
    apart from ``settings`` so that a request not due for a cleanup names the claim's table in no statement."""

    __tablename__ = "preferences"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


class RateLimit(Base):
    """A fixed-window counter shared by every process; ``key`` names bucket, client and window."""

    __tablename__ = "rate_limits"

    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    count: Mapped[int] = mapped_column(Integer, default=0)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)


class AdminRole(StrEnum):
    """What an admin may do (``app.auth.permissions`` maps each to its permissions)."""

    OWNER = "owner"  # everything, on every form: admins, retention, notifications, forms
    RESPONDER = "responder"  # reads, answers, triages and deletes the inquiries of the forms given to them
    VIEWER = "viewer"  # reads the inquiries of the forms given to them; writes nothing


class Admin(UserMixin, Base):
    """A person who reads the inbox; logs in with passkeys only. Owners see every form; responders and viewers
    the forms given to them (``AdminForm``, loaded with the admin)."""

    __tablename__ = "admins"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    user_handle: Mapped[bytes] = mapped_column(LargeBinary(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # The admin's language for the admin pages (app.core.i18n); None: the browser's.
    locale: Mapped[str | None] = mapped_column(String(16), nullable=True)
    # Where people's answers to this admin's replies go (``Reply-To``, ``app.replies``); None: the team's.
    email: Mapped[str | None] = mapped_column(String(254), nullable=True)
    role: Mapped[str] = mapped_column(String(16), default=AdminRole.OWNER, server_default=AdminRole.OWNER.value)
    # When this admin put away the Overview's getting-started checklist (``app.admin.start``); None: shown.
    start_dismissed_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    form_links: Mapped[list[AdminForm]] = relationship(lazy="selectin", cascade="all, delete-orphan")

    @property
    def form_ids(self) -> frozenset[int]:
        """The ids of the forms given to this admin (an owner's are every form, whatever is listed)."""
        return frozenset(link.form_id for link in self.form_links)


class AdminForm(Base):
    """A form given to a responder or viewer (table ``admin_forms``); goes with its admin and its form."""

    __tablename__ = "admin_forms"
    __table_args__ = (
        PrimaryKeyConstraint("admin_id", "form_id"),
        Index("ix_admin_forms_form_id", "form_id"),  # a form's deletion cascades through it
    )

    admin_id: Mapped[int] = mapped_column(ForeignKey("admins.id", ondelete="CASCADE"))
    form_id: Mapped[int] = mapped_column(ForeignKey("forms.id", ondelete="CASCADE"))


class Passkey(Base):
    """A WebAuthn credential registered by an admin."""

    __tablename__ = "passkeys"

    id: Mapped[int] = mapped_column(primary_key=True)
    admin_id: Mapped[int] = mapped_column(ForeignKey("admins.id", ondelete="CASCADE"), index=True)
    credential_id: Mapped[bytes] = mapped_column(LargeBinary(1023), unique=True)
    public_key: Mapped[bytes] = mapped_column(LargeBinary)
    sign_count: Mapped[int] = mapped_column(Integer, default=0)
    transports: Mapped[str] = mapped_column(String(200), default="")
    aaguid: Mapped[str] = mapped_column(String(36), default="")
    backed_up: Mapped[bool] = mapped_column(Boolean, default=False)
    device_type: Mapped[str] = mapped_column(String(32), default="")
    name: Mapped[str] = mapped_column(String(100))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class OneTimeSecret(Base):
    """A secret used once before it expires; two kinds share the ``one_time_secrets`` table.

    * a WebAuthn challenge: ``identifier`` is ``login:<nonce>`` or
      ``registration:<nonce>`` (``app.auth.challenges``);
    * an enrollment invite: ``identifier`` is the SHA-256 of the link's token
      (``app.auth.invites``).
    """

    __tablename__ = "one_time_secrets"

    id: Mapped[int] = mapped_column(primary_key=True)
    identifier: Mapped[str] = mapped_column(String(128), unique=True)
    value: Mapped[str] = mapped_column(Text)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class UsedChallenge(Base):
    """A proof-of-work challenge already solved once (``app.inquiries.store``), kept until it expires.

    The primary key is the challenge's expiry and signature: inserting it is
    the one atomic step that lets a solution count once, however many
    requests race. The signature covers the expiry, so one signature never
    comes with two expiries and the pair is as unique as the signature
    alone. Ordered by expiry first, a new row lands at the end of the key,
    and the cleanup deletes from its start with no other index; on SQLite
    the table is the key (``WITHOUT ROWID``). Keyed by the random signature
    with an index on the expiry, the table cost SQLite's WAL more than
    twice as many pages a solved submission (migration 0007;
    figures: docs/benchmarks.md, "Figures behind the code").
    """

    __tablename__ = "used_challenges"
    __table_args__ = (PrimaryKeyConstraint("expires_at", "signature"), {"sqlite_with_rowid": False})

    signature: Mapped[str] = mapped_column(String(64))  # HMAC-SHA-256, hex
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)


class AdminLogin(Base):
    """A browser an admin has logged in with (table ``admin_logins``).

    The cookie holds a random token, the row only its hash. Called a login,
    not a session, so that "session" in the code always means SQLAlchemy's.
    """

    __tablename__ = "admin_logins"

    id: Mapped[int] = mapped_column(primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    admin_id: Mapped[int] = mapped_column(ForeignKey("admins.id", ondelete="CASCADE"), index=True)
    passkey_id: Mapped[int | None] = mapped_column(ForeignKey("passkeys.id", ondelete="SET NULL"), index=True)
    browser: Mapped[str] = mapped_column(String(100), default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    last_seen_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)


class CleanupStatus(StrEnum):
    """How a cleanup run ended (or that it is still running), as stored in the ledger."""

    RUNNING = "running"
    OK = "ok"
    PARTIAL = "partial"
    ERROR = "error"
    ABANDONED = "abandoned"  # its process died; closed by the next run that took the claim


class CleanupRun(Base):
    """One cleanup run: the ledger (table ``cleanup_runs``). No personal data."""

    __tablename__ = "cleanup_runs"

    id: Mapped[int] = mapped_column(primary_key=True)
    trigger: Mapped[str] = mapped_column(String(40))
    started_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, index=True)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # When the deleted rows had left SQLite's search index and WAL too (app.inquiries.gone); None: nothing to forget.
    forgotten_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    cutoff: Mapped[datetime] = mapped_column(UTCDateTime)
    retention_days: Mapped[int] = mapped_column(Integer)
    # The forms with a retention of their own at the claim: {form id: days}; their cutoffs follow.
    form_retention_days: Mapped[dict | None] = mapped_column(JSON)
    deleted: Mapped[str] = mapped_column(Text, default="{}")
    remaining: Mapped[int] = mapped_column(Integer, default=0)
    status: Mapped[str] = mapped_column(String(16), default=CleanupStatus.RUNNING)
    error: Mapped[str | None] = mapped_column(String(500))
    # The chain (``app.cleanup.chain``): the previous row's hash, and this row's over its content and that one.
    prev_hash: Mapped[str | None] = mapped_column(String(64))
    row_hash: Mapped[str | None] = mapped_column(String(64))


class TallyKind(StrEnum):
    """What a ``FormTally`` counts: the cleanup's targets by name, or the audit action that removed inquiries."""

    INQUIRIES = "inquiries"  # deleted by the cleanup from the inbox
    SPAM = "spam"  # deleted by the cleanup from spam
    ANONYMISED = "anonymised"  # anonymised by the cleanup (``app.cleanup.anonymise``)
    DELETED = "deleted"  # deleted by an admin (``AuditAction.DELETED``)
    SPAM_DELETED = "spam_deleted"  # spam deleted by an admin
    ERASED = "erased"  # erased on request (``app.people.erasure``)


class FormTally(Base):
    """How many inquiries of one form left the inbox one way (``app.inquiries.tally``): a cleanup run's row
    per form and target (each batch adds to it), or an admin's deletion or an erasure. No personal data."""

    __tablename__ = "form_tallies"
    __table_args__ = (
        # The cleanup's upsert finds its run's row here; rows with no run never conflict (NULLs are distinct).
        Index("ux_form_tallies_run_id_form_id_kind", "run_id", "form_id", "kind", unique=True),
        Index("ix_form_tallies_form_id_at", "form_id", "at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    form_id: Mapped[int] = mapped_column(Integer)  # no foreign key, as ``Inquiry.form_id``; kept after the form
    kind: Mapped[str] = mapped_column(String(16))
    count: Mapped[int] = mapped_column(Integer)
    at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)  # the run's start, or the admin's action
    run_id: Mapped[int | None] = mapped_column(Integer)  # the cleanup run (``CleanupRun.id``); None otherwise


class AuditAction(StrEnum):
    """What an audit entry records (``AuditEntry.action``, written only by ``app.audit.record``)."""

    # inquiries
    DELETED = "deleted"
    SPAM_DELETED = "spam_deleted"
    MARKED_NOT_SPAM = "marked_not_spam"
    MARKED_SPAM = "marked_spam"
    HOLD_PLACED = "hold_placed"
    HOLD_RELEASED = "hold_released"
    MARKED_READ = "marked_read"  # entries from before read marks were each admin's own
    MARKED_UNREAD = "marked_unread"  # likewise
    MARKED_ANSWERED = "marked_answered"
    MARKED_UNANSWERED = "marked_unanswered"
    REPLY_SENT = "reply_sent"
    HELD_MESSAGE_THREADED = "held_message_threaded"  # an e-mail held apart put into the inquiry it named
    HELD_MESSAGE_DELETED = "held_message_deleted"
    # people
    ERASED = "erased"
    ERASURES_APPLIED = "erasures_applied"
    # site settings and forms
    RETENTION_CHANGED = "retention_changed"
    SPAM_RETENTION_CHANGED = "spam_retention_changed"
    SPAM_WORDS_CHANGED = "spam_words_changed"
    NOTIFICATIONS_CHANGED = "notifications_changed"
    WEBHOOK_SECRET_CREATED = "webhook_secret_created"
    WEBHOOK_SECRET_ROTATED = "webhook_secret_rotated"
    NOTIFICATION_TEST = "notification_test"
    DELIVERY_SENT_AGAIN = "delivery_sent_again"  # a failed notification queued again from the delivery log
    FORM_CREATED = "form_created"
    FORM_CHANGED = "form_changed"
    SITE_ALLOWED = "site_allowed"
    FORM_DELETED = "form_deleted"
    # admins and their accounts
    INVITE_CREATED = "invite_created"
    ADMIN_ENROLLED = "admin_enrolled"
    ADMIN_REMOVED = "admin_removed"
    SESSIONS_REVOKED = "sessions_revoked"
    SESSION_REVOKED = "session_revoked"
    PASSKEY_ADDED = "passkey_added"
    PASSKEY_RENAMED = "passkey_renamed"
    PASSKEY_REMOVED = "passkey_removed"
    EMAIL_CHANGED = "email_changed"
    NAME_CHANGED = "name_changed"  # an admin's display name (the account page)
    LANGUAGE_CHANGED = "language_changed"
    ROLE_CHANGED = "role_changed"
    # triage
    STATE_CHANGED = "state_changed"
    ASSIGNED = "assigned"
    TAGGED = "tagged"
    NOTE_ADDED = "note_added"
    TAG_CREATED = "tag_created"
    TAG_DELETED = "tag_deleted"


class AuditEntry(Base):
    """A manual admin action: deletions, holds, retention changes. No message content."""

    __tablename__ = "audit_entries"

    id: Mapped[int] = mapped_column(primary_key=True)
    admin_name: Mapped[str] = mapped_column(String(100))
    action: Mapped[str] = mapped_column(String(40))
    count: Mapped[int] = mapped_column(Integer, default=0)
    detail: Mapped[str] = mapped_column(String(300), default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, index=True)


class SpamToken(Base):
    """What admins taught the learned spam score (``app.inquiries.learned``): for a keyed hash of a word,
    a link's domain or a sender, how many inquiries holding it they moved to spam and out of it."""

    __tablename__ = "spam_tokens"

    token: Mapped[str] = mapped_column(String(32), primary_key=True)
    spam: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    ham: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


class RefusedSite(Base):
    """Posts to a form from a site it does not list (``app.forms.refused``): how many, and the latest."""

    __tablename__ = "refused_sites"
    __table_args__ = (PrimaryKeyConstraint("form_id", "origin"),)

    form_id: Mapped[int] = mapped_column(Integer)
    origin: Mapped[str] = mapped_column(String(200))
    count: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    last_at: Mapped[datetime] = mapped_column(UTCDateTime)


class InquiryView(Base):
    """One admin's own view of one inquiry: when they opened it (the record of that access) and whether
    they have read it (``app.inquiries.reads``).

    The one row an admin's opening of an inquiry writes: read or unread is
    each admin's own, so no GET changes what another admin sees. Goes with
    its inquiry and with its admin (``ON DELETE CASCADE``); the key leads
    with the inquiry, so a deleted inquiry's rows are found by it.
    """

    __tablename__ = "inquiry_views"
    __table_args__ = (
        PrimaryKeyConstraint("inquiry_id", "admin_id"),
        Index("ix_inquiry_views_admin_id", "admin_id"),  # an admin's removal cascades through it
        {"sqlite_with_rowid": False},
    )

    inquiry_id: Mapped[int] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"))
    admin_id: Mapped[int] = mapped_column(ForeignKey("admins.id", ondelete="CASCADE"))
    # None when the admin marked it read without opening it (or before 0014, when marks were shared).
    first_opened_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_opened_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    read_at: Mapped[datetime | None] = mapped_column(UTCDateTime)  # None: unread for this admin


class DeliveryStatus(StrEnum):
    """Where a notification stands in the outbox."""

    PENDING = "pending"
    DONE = "done"
    FAILED = "failed"  # every attempt of the schedule failed, or one that can never succeed


class DeliveryChannel(StrEnum):
    """How a delivery goes out (``Delivery.channel``): each is a module of ``app.notify.channels``."""

    EMAIL = "email"
    WEBHOOK = "webhook"
    SLACK = "slack"  # the chat services of SUNDOWN_NOTIFY_URLS (app.notify.channels.chat)
    DISCORD = "discord"
    MSTEAMS = "msteams"
    TELEGRAM = "telegram"
    MATRIX = "matrix"
    NTFY = "ntfy"


class DeliveryKind(StrEnum):
    """What a delivery carries (``Delivery.kind``), and so who sends it (``app.outbox.handlers``)."""

    INQUIRY = "inquiry"  # a new inquiry's notification (``app.notify``)
    CAPPED = "capped"  # one held back by the hourly cap: it waits for the end of the hour, in a digest
    TEST = "test"  # an admin's test notification
    REPLY = "reply"  # an admin's reply to the person who wrote (``app.replies``)
    ACK = "ack"  # a form's acknowledgement to the person who wrote
    MESSAGE = "message"  # the person's answer by e-mail joined the inquiry's conversation (``app.notify``)
    SPAM = "spam"  # how many of a form's inquiries went to spam in a window (``app.notify.spamnote``)
    ASSIGNEE = "assignee"  # the person's answer told to the inquiry's assignee at their own address (``app.notify``)
    RETENTION = "retention"  # forms about to lose inquiries for the first time (``app.notify.warning``)
    RETENTION_WEEK = "retention_week"  # the weekly summary of what the next seven days delete (``app.notify.summary``)


class Delivery(Base):
    """One notification to send on one channel (the outbox, table ``deliveries``): an inquiry's or an admin's test.

    No payload is stored: the message is built from the inquiry at send
    time, so an inquiry deleted before delivery is never sent, and its rows
    go with it (``ON DELETE CASCADE``). ``idempotency_key`` is the webhook's
    ``webhook-id`` and the e-mail's ``Message-ID``, the same on every attempt.

    Every submission writes two rows here inside its write transaction, so
    the table keeps only the indexes its readers need. ``idempotency_key``
    is 128 random bits with no unique index (it cost SQLite's WAL extra
    pages a submission, the random key landing on a page of its own), and
    ``finished_at`` is indexed only where set, for the cleanup: a pending
    row enters neither (migration 0007, which cut the WAL pages a
    submission writes; figures: docs/benchmarks.md, "Figures behind the code").
    """

    __tablename__ = "deliveries"
    __table_args__ = (
        Index("ix_deliveries_status_next_attempt_at", "status", "next_attempt_at"),
        Index(
            "ix_deliveries_finished_at",
            "finished_at",
            sqlite_where=text("finished_at IS NOT NULL"),
            postgresql_where=text("finished_at IS NOT NULL"),
        ),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    inquiry_id: Mapped[int | None] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"), index=True)
    channel: Mapped[str] = mapped_column(String(16))  # a DeliveryChannel
    kind: Mapped[str] = mapped_column(String(16), default=DeliveryKind.INQUIRY)  # a DeliveryKind
    status: Mapped[str] = mapped_column(String(16), default=DeliveryStatus.PENDING)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(UTCDateTime)
    lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_error: Mapped[str | None] = mapped_column(String(300))
    idempotency_key: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    delivered_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)  # done or failed; the cleanup's age


class Erasure(Base):
    """A person's inquiries erased on request (``app.people``): never the address itself.

    ``email_hash`` is a keyed HMAC of the normalised address, so that
    ``flask erasures apply`` can erase again, after a restore, the inquiries
    this erasure covered: those of that address received up to ``created_at``.
    """

    __tablename__ = "erasures"

    id: Mapped[int] = mapped_column(primary_key=True)
    email_hash: Mapped[str] = mapped_column(String(64), index=True)  # HMAC-SHA-256, hex
    count: Mapped[int] = mapped_column(Integer, default=0)
    kept_on_hold: Mapped[int] = mapped_column(Integer, default=0)
    actor: Mapped[str] = mapped_column(String(100))
    # The forms it covered when an admin given some forms erased (their inquiries only); None: every form.
    form_ids: Mapped[list | None] = mapped_column(JSON(none_as_null=True))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class ReplyKind(StrEnum):
    """Who a reply is from (``Reply.kind``, and the kind of its outbox row)."""

    REPLY = DeliveryKind.REPLY.value  # an admin, from the inbox
    ACK = DeliveryKind.ACK.value  # the form, automatically


class ReplyStatus(StrEnum):
    """What became of a reply (``Reply.status``), kept once its outbox row is cleaned up."""

    QUEUED = "queued"
    SENT = "sent"
    FAILED = "failed"


class Reply(Base):
    """An e-mail to the person who wrote an inquiry (``app.replies``): an admin's reply or the form's
    acknowledgement (``kind``), as it was sent, and its thread's ``Message-ID``.

    Deleted with its inquiry (``ON DELETE CASCADE``). The outbox row
    (``delivery_id``) carries the attempts and the last error; the cleanup
    deletes finished outbox rows after 30 days, so ``status`` and
    ``sent_at`` keep the outcome.
    """

    __tablename__ = "replies"

    id: Mapped[int] = mapped_column(primary_key=True)
    inquiry_id: Mapped[int] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"), index=True)
    admin_id: Mapped[int | None] = mapped_column(ForeignKey("admins.id", ondelete="SET NULL"), index=True)
    kind: Mapped[str] = mapped_column(String(16))  # a ReplyKind
    subject: Mapped[str] = mapped_column(String(300))
    body: Mapped[str] = mapped_column(Text)
    locale: Mapped[str] = mapped_column(String(16))
    reply_to: Mapped[str | None] = mapped_column(String(254))
    message_id: Mapped[str] = mapped_column(String(200))
    status: Mapped[str] = mapped_column(String(16))  # a ReplyStatus
    delivery_id: Mapped[int | None] = mapped_column(ForeignKey("deliveries.id", ondelete="SET NULL"), index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    sent_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class Attachment(Base):
    """A file sent with an inquiry (``app.attachments``): its name for display, its type by content, its size.

    The bytes are in ``attachment_chunks``, in the same database, so every
    replica reads them and a deletion takes them in its own transaction: an
    inquiry's deletion cascades here, and on to its chunks. A file of an
    e-mail held apart belongs to that message (``held_message_id``) until an
    owner puts it into a thread; exactly one of the two is set.
    """

    __tablename__ = "attachments"
    __table_args__ = (
        CheckConstraint("(inquiry_id IS NULL) <> (held_message_id IS NULL)", name="ck_attachments_one_owner"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    inquiry_id: Mapped[int | None] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"), index=True)
    held_message_id: Mapped[int | None] = mapped_column(
        ForeignKey("inbound_messages.id", ondelete="CASCADE"), index=True
    )
    field_key: Mapped[str] = mapped_column(String(40))
    name: Mapped[str] = mapped_column(String(200))  # sanitised, for display and downloads only
    content_type: Mapped[str] = mapped_column(String(100))  # detected from the bytes, never the name
    size: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class AttachmentChunk(Base):
    """A piece of an attachment's bytes (``app.attachments.store.CHUNK_SIZE``), ``seq`` from 0.

    Pieces keep every statement small: a file is written, read and deleted
    a piece at a time, so memory and the cleanup's batches stay bounded by
    bytes (``app.cleanup.targets``), not by a file's size.
    """

    __tablename__ = "attachment_chunks"
    __table_args__ = (Index("ix_attachment_chunks_attachment_id_seq", "attachment_id", "seq", unique=True),)

    id: Mapped[int] = mapped_column(primary_key=True)
    attachment_id: Mapped[int] = mapped_column(ForeignKey("attachments.id", ondelete="CASCADE"))
    seq: Mapped[int] = mapped_column(Integer)
    data: Mapped[bytes] = mapped_column(LargeBinary)


class InquiryState(StrEnum):
    """Where the team's work on an inquiry stands (``InquiryTriage.state``); no row: open."""

    OPEN = "open"
    WAITING = "waiting"  # on the person who wrote, or on someone else
    CLOSED = "closed"


class InquiryTriage(Base):
    """An inquiry's state and the admin it is assigned to (``app.inquiries.triage``); no row: open, unassigned.

    A table of its own, not columns of ``submissions``: the intake writes
    nothing more per inquiry, and the row goes with its inquiry
    (``ON DELETE CASCADE``); a removed admin's assignments become unassigned.
    """

    __tablename__ = "inquiry_triage"

    inquiry_id: Mapped[int] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"), primary_key=True)
    state: Mapped[str] = mapped_column(String(16), default=InquiryState.OPEN, server_default=InquiryState.OPEN.value)
    assigned_to: Mapped[int | None] = mapped_column(ForeignKey("admins.id", ondelete="SET NULL"), index=True)
    changed_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Tag(Base):
    """A tag an owner defines, put on inquiries by those who triage them (``InquiryTag``)."""

    __tablename__ = "tags"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(40), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class InquiryTag(Base):
    """A tag on an inquiry; goes with either (``ON DELETE CASCADE``)."""

    __tablename__ = "inquiry_tags"
    __table_args__ = (
        PrimaryKeyConstraint("inquiry_id", "tag_id"),
        Index("ix_inquiry_tags_tag_id", "tag_id"),  # the filter by tag, and a tag's deletion
    )

    inquiry_id: Mapped[int] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"))
    tag_id: Mapped[int] = mapped_column(ForeignKey("tags.id", ondelete="CASCADE"))


class Note(Base):
    """An internal note on an inquiry: for the team only, never sent; kept, exported, erased and deleted with
    its inquiry (``ON DELETE CASCADE``)."""

    __tablename__ = "inquiry_notes"

    id: Mapped[int] = mapped_column(primary_key=True)
    inquiry_id: Mapped[int] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"), index=True)
    admin_id: Mapped[int | None] = mapped_column(ForeignKey("admins.id", ondelete="SET NULL"))
    admin_name: Mapped[str] = mapped_column(String(100))
    body: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class AccessKind(StrEnum):
    """What an admin opened (``Access.kind``)."""

    OPENED = "opened"  # an inquiry's page
    FILE = "file"  # one of its files, downloaded or previewed
    EXPORT = "export"  # the CSV export (``count`` inquiries, no inquiry named)
    PERSON_EXPORT = "person_export"  # a person's export from People (one row per inquiry in it)


class Access(Base):
    """Who opened what, and when (``app.inquiries.access``): no free text, only an inquiry's number.

    Outlives the inquiry as the audit log does (the number names nothing
    once it is gone) and follows the audit log's retention; keeps the
    admin's name after they are removed.
    """

    __tablename__ = "accesses"

    id: Mapped[int] = mapped_column(primary_key=True)
    admin_id: Mapped[int | None] = mapped_column(ForeignKey("admins.id", ondelete="SET NULL"))
    admin_name: Mapped[str] = mapped_column(String(100))
    kind: Mapped[str] = mapped_column(String(16))
    inquiry_id: Mapped[int | None] = mapped_column(Integer, index=True)  # None for the CSV export
    count: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, index=True)


class MessageState(StrEnum):
    """Where a person's e-mail is: in its inquiry's thread, or held apart for an owner to look at."""

    THREAD = "thread"
    HELD = "held"


class MessageKind(StrEnum):
    """What a received e-mail is: a person's message, an automatic reply, or a bounce (a DSN)."""

    MESSAGE = "message"
    AUTO_REPLY = "auto_reply"
    BOUNCE = "bounce"


class InboundMessage(Base):
    """An e-mail received about an inquiry (``app.conversations``), reduced to plain text.

    In its inquiry's thread (``state`` thread), or held apart (``held``:
    nothing matched it, or it came from another address than the inquiry's;
    ``inquiry_id`` then names the inquiry it pointed at, if any). Deleted
    with its inquiry (``ON DELETE CASCADE``), as its files are (the
    inquiry's attachments with ``field_key`` ``mail:<id>``; a held one's
    files are its own, ``Attachment.held_message_id``, until it is put into
    a thread); a held one the cleanup deletes after ``app.cleanup.targets.HELD_KEEP``.
    """

    __tablename__ = "inbound_messages"
    __table_args__ = (Index("ix_inbound_messages_inquiry_id_received_at", "inquiry_id", "received_at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    inquiry_id: Mapped[int | None] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"))
    state: Mapped[str] = mapped_column(String(16), index=True)
    kind: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str | None] = mapped_column(String(40))  # why held, or a bounce's diagnostic
    sender: Mapped[str] = mapped_column(String(254))
    # ``app.inquiries.addresses.mailbox_key`` of the sender: whether an address has written to us before.
    sender_key: Mapped[str | None] = mapped_column(String(254), index=True)
    sender_name: Mapped[str] = mapped_column(String(100), default="")
    subject: Mapped[str] = mapped_column(String(300), default="")
    body: Mapped[str] = mapped_column(Text)
    message_id: Mapped[str | None] = mapped_column(String(200), index=True)
    files_refused: Mapped[int] = mapped_column(Integer, default=0)
    received_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
