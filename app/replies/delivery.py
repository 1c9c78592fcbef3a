"""Sending a reply or an acknowledgement: the handler ``app.replies`` registers with the outbox.

For a batch's replies it reads, in the batch's one read transaction, each
reply and its inquiry; it mails each to the inquiry's address, never to
the site's recipients and never in a digest, over the batch's SMTP
connection (shared with the batch's notifications); and it keeps each
finished attempt's outcome on the reply, since finished outbox rows are
cleaned up after 30 days.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from app.core import clock
from app.models import Delivery, DeliveryKind, DeliveryStatus, Inquiry, Reply, ReplyStatus
from app.notify.channels import email
from app.outbox.handlers import Batch
from app.outbox.store import Outcome
from app.replies import message

KINDS = (DeliveryKind.REPLY, DeliveryKind.ACK)


@dataclass(frozen=True)
class Job:
    """One reply of a batch: its outbox row, the reply (None once it is gone) and its inquiry."""

    delivery: Delivery
    reply: Reply | None
    inquiry: Inquiry


class Replies:
    """The handler of replies and acknowledgements."""

    def prepare(self, session: Session, rows: list[Delivery]) -> dict[int, Job]:
        """The job of each row whose inquiry is still there, by delivery id (two queries for the batch)."""
        ids = [row.id for row in rows]
        replies = {each.delivery_id: each for each in session.scalars(select(Reply).where(Reply.delivery_id.in_(ids)))}
        wanted = {row.inquiry_id for row in rows}
        inquiries = {each.id: each for each in session.scalars(select(Inquiry).where(Inquiry.id.in_(wanted)))}
        return {
            row.id: Job(row, replies.get(row.id), inquiries[row.inquiry_id])
            for row in rows
            if row.inquiry_id in inquiries
        }

    def send(self, job: Job, batch: Batch) -> Outcome:
        """One attempt at the reply, to its inquiry's address, over the batch's relay."""
        if not email.configured():
            return Outcome("e-mail not configured")
        if job.reply is None:
            return Outcome("reply gone", permanent=True)
        try:
            mail = message.build(job.reply, job.inquiry, clock.now())
        except ValueError:
            return Outcome("the address cannot be used in an e-mail", permanent=True)
        return email.relay_of(batch).send(mail)

    def finished(self, session: Session, finished: list[tuple[Delivery, str, datetime]]) -> None:
        """Keep each finished reply's outcome ``(outbox row, its new status, when)`` on the reply."""
        for delivery, status, at in finished:
            if status == DeliveryStatus.PENDING:
                continue
            done = status == DeliveryStatus.DONE
            session.execute(
                update(Reply)
                .where(Reply.delivery_id == delivery.id)
                .values(status=ReplyStatus.SENT if done else ReplyStatus.FAILED, sent_at=at if done else None)
            )


HANDLER = Replies()
