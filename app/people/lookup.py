"""Finding a person: the normalised address, their inquiries and audit entries, the address's keyed hash.

An address is looked up as intake stores it (``validation.normalize_email``:
the domain lowercased, Unicode NFC), by its key: the address folded by
Python's ``str.lower`` (``key_of``), stored with each inquiry at intake
(``Inquiry.email_key``, indexed) and compared for equality. Folding in the
database instead would differ: SQLite's ``lower()`` folds ASCII letters only.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass, field

from flask import current_app
from sqlalchemy import ColumnElement, bindparam, or_, select
from sqlalchemy.orm import Session

from app.inquiries.validation import normalize_email
from app.models import AuditEntry, Erasure, Inquiry

HASH_CONTEXT = b"sundown erasures: e-mail address hash v1"
AUDIT_CHUNK = 100  # inquiries per audit query: two conditions each


Forms = frozenset[int] | None  # the forms an admin reaches (app.auth.permissions.forms_for); None: every form


def normalise(raw: str) -> str | None:
    """The address as intake stores it, case folded (a person is one address in any case); None if invalid."""
    if not isinstance(raw, str) or not raw.strip() or len(raw) > 320:
        return None
    address = normalize_email(raw)
    return None if address is None else address.lower()


def key_of(address: str) -> str | None:
    """The lookup key of a stored (normalised) address: folded as ``normalise`` folds; None for none."""
    return address.lower() or None


def email_hash(address: str) -> str:
    """The keyed HMAC-SHA-256 (hex) of a normalised address, case folded: what is kept instead of it.

    The key is derived from ``SECRET_KEY``, so the hash cannot be matched
    against a list of addresses without it. Keep the same secret key across a
    restore: ``flask erasures apply`` matches by this hash.
    """
    secret = current_app.config["SECRET_KEY"]
    secret = secret.encode() if isinstance(secret, str) else secret
    key = hmac.new(secret, HASH_CONTEXT, hashlib.sha256).digest()
    return hmac.new(key, address.lower().encode("utf-8"), hashlib.sha256).hexdigest()


def of_address(address: str, forms: Forms = None) -> ColumnElement[bool]:
    """Inquiries whose address is ``address`` in any case (by the indexed key), of the forms ``forms`` (None:
    every form; an admin given some forms reaches only theirs)."""
    condition = Inquiry.email_key == bindparam("person_address", key_of(address))
    return condition if forms is None else condition & Inquiry.form_id.in_(sorted(forms))


def inquiries_of(session: Session, address: str, forms: Forms = None) -> list[Inquiry]:
    """Every inquiry held for ``address``: both folders, on hold or not, even past retention; oldest first."""
    statement = select(Inquiry).where(of_address(address, forms)).order_by(Inquiry.created_at, Inquiry.id)
    return list(session.scalars(statement))


def ids_of(session: Session, address: str, forms: Forms = None) -> list[int]:
    """The ids of every inquiry held for ``address``, oldest first."""
    statement = select(Inquiry.id).where(of_address(address, forms)).order_by(Inquiry.created_at, Inquiry.id)
    return list(session.scalars(statement))


def about(inquiry_id: int) -> ColumnElement[bool]:
    """Audit entries about one inquiry: their detail is ``inquiry #N`` or ``inquiry #N: ...``."""
    return or_(AuditEntry.detail == f"inquiry #{inquiry_id}", AuditEntry.detail.like(f"inquiry #{inquiry_id}:%"))


def audit_of(session: Session, ids: list[int]) -> dict[int, list[AuditEntry]]:
    """The audit entries about each of ``ids``, oldest first."""
    found: dict[int, list[AuditEntry]] = {inquiry_id: [] for inquiry_id in ids}
    for start in range(0, len(ids), AUDIT_CHUNK):
        chunk = ids[start : start + AUDIT_CHUNK]
        statement = (
            select(AuditEntry).where(or_(*(about(i) for i in chunk))).order_by(AuditEntry.created_at, AuditEntry.id)
        )
        for entry in session.scalars(statement):
            found[_inquiry_id_of(entry.detail)].append(entry)
    return found


def _inquiry_id_of(detail: str) -> int:
    return int(detail.removeprefix("inquiry #").split(":", 1)[0])


def erasures_of(session: Session, address: str) -> list[Erasure]:
    """The erasures of ``address`` so far, oldest first (found by its keyed hash)."""
    statement = select(Erasure).where(Erasure.email_hash == email_hash(address)).order_by(Erasure.created_at)
    return list(session.scalars(statement))


@dataclass
class Person:
    """Everything held about one address: the inquiries, the audit entries about each, its past erasures."""

    address: str
    inquiries: list[Inquiry]
    audit: dict[int, list[AuditEntry]] = field(default_factory=dict)
    erasures: list[Erasure] = field(default_factory=list)
    forms: Forms = None  # the forms looked in (None: every form)

    @property
    def held(self) -> list[Inquiry]:
        """The inquiries on legal hold: an erasure keeps them."""
        return [inquiry for inquiry in self.inquiries if inquiry.legal_hold]

    @property
    def erasable(self) -> int:
        """How many inquiries an erasure would delete now."""
        return len(self.inquiries) - len(self.held)


def find(session: Session, address: str, forms: Forms = None) -> Person:
    """Everything held about the normalised ``address`` (on the forms ``forms``; None: every form)."""
    inquiries = inquiries_of(session, address, forms)
    audit = audit_of(session, [inquiry.id for inquiry in inquiries])
    return Person(address, inquiries, audit, erasures_of(session, address), forms)
