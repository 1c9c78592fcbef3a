"""People: the page of everything held about one address, its exports, and its erasure with holds."""

from __future__ import annotations

import csv
import io
import json

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from sqlalchemy import delete, event, func, select

from app import audit
from app.core import db
from app.inquiries import learned
from app.inquiries.validation import normalize_email
from app.models import AuditEntry, Erasure, Inquiry
from app.people import erasure, lookup, records
from tests.factories import add_inquiries, inquiry
from tests.helpers import csrf_token, query_plan, settle

ADA = "ada@example.com"


def arrange_person(db_session, clock) -> dict[str, int]:
    """Ada's inquiries in the inbox, in spam, on hold and past retention; Bob's one inquiry."""
    inbox, spam, held, old, other = add_inquiries(
        db_session,
        [
            inquiry(clock, 2, email="Ada@Example.com", message="=SUM(A1)"),
            inquiry(clock, 3, email="ADA@example.com", status="spam", message="cheap pills"),
            inquiry(clock, 4, email=ADA, legal_hold=True, hold_reason="Claim 42", hold_by="Grace", held_at=clock()),
            inquiry(clock, 400, email=ADA, message="past retention, not cleaned up yet"),
            inquiry(clock, 1, email="bob@example.com", name="Bob"),
        ],
    )
    db_session.add(
        AuditEntry(
            admin_name="Grace", action="hold_placed", count=1, detail=f"inquiry #{held}: Claim 42", created_at=clock()
        )
    )
    db_session.add(
        AuditEntry(
            admin_name="Grace", action="marked_not_spam", count=1, detail=f"inquiry #{inbox}", created_at=clock()
        )
    )
    db_session.add(
        AuditEntry(admin_name="Grace", action="hold_released", count=1, detail=f"inquiry #{inbox}0", created_at=clock())
    )  # another inquiry's
    db_session.commit()
    return {"inbox": inbox, "spam": spam, "held": held, "old": old, "other": other}


def post(client, path, data):
    return client.post(path, data={**data, "csrf_token": csrf_token(client, "/admin/people")})


def test_the_people_page_shows_every_inquiry_of_the_address_in_any_case(admin_client, db_session, clock):
    ids = arrange_person(db_session, clock)
    page = admin_client.get("/admin/people?email=  ada@EXAMPLE.com ")
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    assert "4 inquiries are held for this address." in html and "1 is on legal hold." in html
    for key in ("inbox", "spam", "held", "old"):
        assert f'id="inquiry-{ids[key]}"' in html
    assert f'id="inquiry-{ids["other"]}"' not in html
    assert "Claim 42" in html and "Grace, marked not spam" in html and "marked_not_spam" not in html
    assert "hold released" not in html  # about inquiry #<id>0, not this one
    assert html.count("Past retention: deleted at the next cleanup") == 1
    assert page.headers["Cache-Control"] == "no-store"


def test_the_people_page_refuses_an_invalid_address_with_422(admin_client):
    page = admin_client.get("/admin/people?email=not-an-address")
    assert page.status_code == 422
    assert "Enter a valid email address" in page.get_data(as_text=True)
    assert admin_client.get("/admin/people").status_code == 200


def test_nothing_held_says_so(admin_client):
    assert "Nothing is held about this address." in admin_client.get("/admin/people?email=nobody@example.com").get_data(
        as_text=True
    )


def test_the_json_export_has_the_documented_shape(admin_client, db_session, clock):
    ids = arrange_person(db_session, clock)
    response = admin_client.get("/admin/people/export.json?email=ADA@example.com")
    assert response.status_code == 200 and response.mimetype == "application/json"
    assert "attachment" in response.headers["Content-Disposition"]
    document = json.loads(response.get_data(as_text=True))
    assert list(document) == ["format", "email", "generated_at", "inquiries"]
    assert document["format"] == records.FORMAT and document["email"] == ADA
    assert document["generated_at"] == "2026-06-01T12:00:00Z"
    assert [item["id"] for item in document["inquiries"]] == [ids["old"], ids["held"], ids["spam"], ids["inbox"]]
    held = document["inquiries"][1]
    assert held == {
        "id": ids["held"],
        "status": "inbox",
        "received_at": "2026-05-28T12:00:00Z",
        "name": "Ada",
        "email": ADA,
        "message": "Hello",
        "user_agent": None,
        "legal_hold": True,
        "hold_reason": "Claim 42",
        "hold_by": "Grace",
        "held_at": "2026-06-01T12:00:00Z",
        "audit": [
            {
                "at": "2026-06-01T12:00:00Z",
                "admin": "Grace",
                "action": "hold_placed",
                "detail": f"inquiry #{ids['held']}: Claim 42",
            }
        ],
        "replies": [],
        "attachments": [],
        "messages": [],
        "notes": [],
        "accessed": [{"at": "2026-06-01T12:00:00Z", "admin": "Ada", "what": "person_export"}],
    }


def test_the_csv_export_neutralises_formulas_and_lists_audit_entries(admin_client, db_session, clock):
    ids = arrange_person(db_session, clock)
    response = admin_client.get("/admin/people/export.csv?email=ada@example.com")
    assert response.status_code == 200 and response.mimetype == "text/csv"
    text = response.get_data(as_text=True)
    assert text.startswith("\ufeff")
    rows = list(csv.reader(io.StringIO(text[1:])))
    assert tuple(rows[0]) == records.HEADER
    by_id = {int(row[0]): dict(zip(records.HEADER, row, strict=False)) for row in rows[1:]}
    assert set(by_id) == {ids["old"], ids["held"], ids["spam"], ids["inbox"]}
    assert by_id[ids["inbox"]]["message"] == "'=SUM(A1)"
    assert by_id[ids["inbox"]]["audit"] == f"2026-06-01 12:00:00 Grace: marked_not_spam (inquiry #{ids['inbox']})"
    assert by_id[ids["held"]]["legal_hold"] == "yes" and by_id[ids["spam"]]["status"] == "spam"


def test_exports_refuse_an_invalid_address_with_400(admin_client):
    assert admin_client.get("/admin/people/export.json?email=x").status_code == 400
    assert admin_client.get("/admin/people/export.csv").status_code == 400


def test_erase_confirms_with_the_count_and_the_holds_then_keeps_only_a_hash(app, admin_client, db_session, clock):
    ids = arrange_person(db_session, clock)
    confirm = post(admin_client, "/admin/people/erase", {"email": "ADA@example.com"})
    assert confirm.status_code == 200
    html = confirm.get_data(as_text=True)
    assert "Erase 3 inquiries of ada@example.com?" in html
    assert "1 inquiry is on legal hold and will be kept:" in html and "Claim 42" in html
    assert db_session.scalar(select(Inquiry.id).where(Inquiry.id == ids["inbox"])) is not None

    done = post(admin_client, "/admin/people/erase", {"email": "ADA@example.com", "confirm": "1"})
    assert done.status_code == 303
    settle(app)
    db_session.rollback()  # a fresh snapshot
    assert sorted(db_session.scalars(select(Inquiry.id))) == sorted([ids["held"], ids["other"]])
    (record,) = db_session.scalars(select(Erasure)).all()
    with app.app_context():
        digest = lookup.email_hash(ADA)
    assert (record.email_hash, record.count, record.kept_on_hold, record.actor) == (digest, 3, 1, "Ada")
    assert record.created_at == clock()
    entry = db_session.scalars(select(AuditEntry).where(AuditEntry.action == "erased")).one()
    assert (entry.admin_name, entry.count) == ("Ada", 3)
    assert entry.detail == f"address hmac {digest}; 1 on legal hold kept"
    every_detail = " ".join(db_session.scalars(select(AuditEntry.detail)))
    assert "ada@" not in every_detail.lower()
    after = admin_client.get("/admin/people?email=ada@example.com").get_data(as_text=True)
    assert "Erased 3 inquiries. 1 inquiry on legal hold kept." in after
    assert "2026-06-01 12:00 UTC: 3 inquiries erased by Ada (1 kept on legal hold)" in after


def test_erase_with_only_held_inquiries_erases_nothing_and_records_nothing(admin_client, db_session, clock):
    add_inquiries(
        db_session, [inquiry(clock, email=ADA, legal_hold=True, hold_reason="Claim", hold_by="G", held_at=clock())]
    )
    response = post(admin_client, "/admin/people/erase", {"email": ADA})
    assert response.status_code == 303
    db_session.rollback()  # a fresh snapshot
    assert db_session.scalar(select(Inquiry.id)) is not None
    assert db_session.scalars(select(Erasure)).all() == []
    assert "Release the hold first." in admin_client.get(response.headers["Location"]).get_data(as_text=True)


def test_erase_needs_post_csrf_and_a_valid_address(admin_client, db_session, clock):
    arrange_person(db_session, clock)
    assert admin_client.get("/admin/people/erase?email=ada@example.com").status_code == 405
    assert admin_client.post("/admin/people/erase", data={"email": ADA, "confirm": "1"}).status_code == 400
    assert post(admin_client, "/admin/people/erase", {"email": "nope", "confirm": "1"}).status_code == 400
    assert db_session.scalars(select(Erasure)).all() == []


def test_hold_reasons_of_erased_inquiries_leave_the_audit_entries(app, admin_client, db_session, clock):
    row, other = add_inquiries(db_session, [inquiry(clock, email=ADA), inquiry(clock, email="grace@example.com")])
    for number, reason in ((row, "Ada Lovelace's complaint"), (other, "Grace's complaint")):
        db_session.add(
            AuditEntry(
                admin_name="Grace",
                action="hold_placed",
                count=1,
                detail=f"inquiry #{number}: {reason}",
                created_at=clock(),
            )
        )
    db_session.add(
        AuditEntry(admin_name="Grace", action="hold_released", count=1, detail=f"inquiry #{row}", created_at=clock())
    )
    db_session.commit()
    post(admin_client, "/admin/people/erase", {"email": ADA, "confirm": "1"})
    db_session.rollback()  # a fresh snapshot
    details = list(
        db_session.scalars(select(AuditEntry.detail).where(AuditEntry.action.like("hold_%")).order_by(AuditEntry.id))
    )
    assert details == [f"inquiry #{row}: (erased)", f"inquiry #{other}: Grace's complaint", f"inquiry #{row}"]


@pytest.mark.parametrize("count", [3, 40])
def test_an_erasure_runs_the_same_statements_however_many_inquiries_it_erases(app, db_session, clock, count):
    """Not one audit-log scan per erased inquiry: the statements do not grow with the count."""
    ids = add_inquiries(db_session, [inquiry(clock, days, email=ADA) for days in range(1, count + 1)])
    db_session.add_all(
        [
            AuditEntry(
                admin_name="Grace",
                action="hold_placed",
                count=1,
                created_at=clock(),
                detail=f"inquiry #{inquiry_id}: a reason",
            )
            for inquiry_id in ids
        ]
    )
    db_session.commit()
    statements: list[str] = []
    engine = db.engine_of(app)
    listener = lambda *args: statements.append(args[2])  # noqa: E731 - (conn, cursor, statement, ...)
    event.listen(engine, "before_cursor_execute", listener)
    try:
        with app.app_context():
            assert erasure.erase(ADA, audit.OPERATOR).erased == count
    finally:
        event.remove(engine, "before_cursor_execute", listener)
    audit_statements = [each for each in statements if "audit_entries" in each]
    assert len(audit_statements) == 3  # read the entries with text, scrub them, record the erasure
    assert db_session.scalars(select(AuditEntry.detail).where(AuditEntry.action == "hold_placed")).all() == [
        f"inquiry #{inquiry_id}: (erased)" for inquiry_id in ids
    ]


def test_an_erasure_while_the_export_streams_stops_the_export_and_leaves_no_half_state(
    admin_client, db_session, clock, monkeypatch
):
    """The export reads page by page; an erasure between two pages commits whole, the export fails loudly."""
    monkeypatch.setattr(records, "PAGE_SIZE", 2)
    add_inquiries(db_session, [inquiry(clock, days, email=ADA, message=f"m{days}") for days in range(1, 6)])
    response = admin_client.get("/admin/people/export.json?email=ada@example.com", buffered=False)
    chunks = response.response
    first = [next(chunks), next(chunks), next(chunks)]  # the head and the first page's two inquiries
    assert b'"inquiries": [' in first[0]

    erased = post(admin_client, "/admin/people/erase", {"email": ADA, "confirm": "1"})
    assert erased.status_code == 303
    with pytest.raises(records.PersonChanged):
        list(chunks)
    response.close()
    db_session.rollback()  # a fresh snapshot
    assert db_session.scalars(select(Inquiry)).all() == []
    assert db_session.scalar(select(Erasure.count)) == 5
    assert [entry.action for entry in db_session.scalars(select(AuditEntry))] == ["erased"]


def test_an_export_after_the_erasure_holds_no_inquiry(admin_client, db_session, clock):
    add_inquiries(db_session, [inquiry(clock, email=ADA)])
    post(admin_client, "/admin/people/erase", {"email": ADA, "confirm": "1"})
    document = admin_client.get("/admin/people/export.json?email=ada@example.com").get_json()
    assert document["inquiries"] == []


def test_the_address_lookup_uses_its_index(app, db_session):
    """``email_key = ?`` is answered from ``ix_submissions_email_key`` on both databases."""
    assert "ix_submissions_email_key" in query_plan(db_session, select(Inquiry.id).where(lookup.of_address(ADA)))


def test_the_privacy_page_says_how_to_ask_for_access_or_erasure(client):
    html = client.get("/privacy").get_data(as_text=True)
    assert "See or erase what we hold about you" in html
    assert '<a href="/">send us an inquiry</a>' in html


LOCAL_PARTS = st.text(alphabet="aAäÄöÖüÜßéÉçÇøØłŁžŽσΣдДя", min_size=1, max_size=8)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    local=LOCAL_PARTS, cases=st.lists(st.sampled_from(["lower", "upper", "title", "swapcase"]), min_size=2, max_size=4)
)
def test_an_address_is_one_person_in_any_case_of_any_letter(app, db_session, clock, local, cases):
    """People and erasure find every inquiry of a mixed-case Unicode address, on both databases."""
    db_session.execute(delete(Inquiry))
    db_session.commit()
    variants = [getattr(local, case)() + "@Example.ORG" for case in cases]
    stored = [normalize_email(variant) for variant in variants]
    assume(all(stored) and len({each.lower() for each in stored}) == 1)
    add_inquiries(db_session, [inquiry(clock, email=address) for address in stored])
    with app.app_context():
        person = lookup.normalise(variants[0])
        assert len(lookup.ids_of(db_session, person)) == len(stored)
        assert erasure.erase(person, "test").erased == len(stored)
    db_session.rollback()
    assert db_session.scalar(select(func.count()).select_from(Inquiry)) == 0


def test_an_erasure_of_every_form_forgets_the_sender_the_spam_score_learned(app, db_session, clock):
    with app.app_context():
        with db.transaction(write=True) as session:
            learned.train(session, [("buy cheap pills", "Eve@Example.org")] * 3, as_spam=True)
        with db.transaction() as session:
            assert learned.marked_sender(session, "eve@example.org")
        erasure.erase("eve@example.org", "operator")
        with db.transaction() as session:
            assert not learned.marked_sender(session, "eve@example.org")
