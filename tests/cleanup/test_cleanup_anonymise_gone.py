"""Anonymised means gone too: on SQLite, what an anonymised inquiry lost is in neither the file nor the WAL.

Its text, its answers, its thread's text and its file's bytes, read as the
files are on disk after the run, as for a deleted inquiry
(tests/inquiries/test_gone.py, whose marker and reading this reuses).
"""

from __future__ import annotations

import pytest

from app import cleanup
from app.core import db
from app.models import InboundMessage
from tests.cleanup.test_cleanup_anonymise import add_survey, answered
from tests.factories import add_file, add_inquiries
from tests.inquiries.test_gone import INDEX_MARKER, MARKED_FILE, MARKER, holds_marker


@pytest.fixture
def db_kind() -> str:
    """SQLite only: these tests read its files. PostgreSQL's dead tuples and WAL: docs/cleanup.md."""
    return "sqlite"


def test_an_anonymised_inquiry_leaves_no_trace_of_what_it_lost(app, clock):
    with app.app_context():
        session = db.get_session()
        form_id = add_survey(session, clock)
        marked = f"Please forget {MARKER} soon {INDEX_MARKER}"
        (old,) = add_inquiries(session, [answered(clock, form_id, 40, message=marked, name=f"Ada {MARKER}")])
        add_file(session, old, MARKED_FILE, "marked.txt")
        session.add(
            InboundMessage(
                inquiry_id=old,
                state="thread",
                kind="message",
                sender="a@example.com",
                body=f"Answer {MARKER}",
                received_at=clock(),
            )
        )
        session.commit()
    assert holds_marker(app)
    with app.app_context():
        run = cleanup.run("test", force=True)
    assert run is not None and run.status == "ok" and run.forgotten_at is not None
    assert not holds_marker(app)
