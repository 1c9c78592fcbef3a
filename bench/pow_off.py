"""The bench's baseline for ``pow_throughput_ratio``: the same app with the proof-of-work switched off.

Every submission is filed in the inbox with no solution: no verification and
no used-challenge insert, and otherwise the path of a solved one (the inbox,
its notifications). ``python -m bench.pow`` sends solved challenges to the
shipped server and plain submissions to this one, alternately. Production
code is unchanged: the two steps are replaced here, for this app only.
"""

from __future__ import annotations

from app import create_app
from app.inquiries import spam, store
from app.models import InquiryStatus


def _no_check(_raw) -> spam.Verdict:
    return spam.Verdict(None)


def _insert_in_inbox(connection, values, _verdict) -> tuple[int, InquiryStatus]:
    return store.insert_inquiry(connection, values, InquiryStatus.INBOX), InquiryStatus.INBOX


spam.check_solution = _no_check
store.insert_judged = _insert_in_inbox
app = create_app()
