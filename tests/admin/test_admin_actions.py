"""Deleting inquiries (one, many, with confirmation), legal holds and the audit log."""

from __future__ import annotations

from sqlalchemy import delete, func, select

from app.inquiries import retention
from app.models import AuditEntry, Inquiry
from tests.factories import add_inquiries, inquiry
from tests.helpers import csrf_token


def remaining_ids(db_session) -> list[int]:
    db_session.expire_all()
    return sorted(db_session.scalars(select(Inquiry.id)))


def audit_entries(db_session) -> list[tuple]:
    """The whole audit log (opening a detail page adds nothing to it: tests/admin/test_admin_workflow.py)."""
    db_session.expire_all()
    return [
        tuple(row)
        for row in db_session.execute(
            select(AuditEntry.admin_name, AuditEntry.action, AuditEntry.count, AuditEntry.detail).order_by(
                AuditEntry.id
            )
        ).all()
    ]


def post(client, path, data):
    return client.post(path, data={**data, "csrf_token": csrf_token(client, "/admin/")})


def test_delete_one_asks_to_confirm_then_deletes_and_audits(admin_client, db_session, clock):
    keep, gone = add_inquiries(db_session, [inquiry(clock), inquiry(clock, message="secret words")])

    confirm = post(admin_client, "/admin/inquiries/delete", {"ids": [gone]})
    assert confirm.status_code == 200
    assert "Delete 1 inquiry?" in confirm.get_data(as_text=True)
    assert remaining_ids(db_session) == sorted([keep, gone])

    done = post(admin_client, "/admin/inquiries/delete", {"ids": [gone], "confirm": "1"})
    assert done.status_code == 303
    assert remaining_ids(db_session) == [keep]
    assert audit_entries(db_session) == [("Ada", "deleted", 1, "")]
    assert "Deleted 1 inquiry." in admin_client.get("/admin/").get_data(as_text=True)


def test_delete_many_from_the_inbox_checkboxes(client, login, db_session, clock):
    login("Grace")
    ids = add_inquiries(db_session, [inquiry(clock) for _ in range(5)])
    page = post(client, "/admin/inquiries/delete", {"ids": ids[:3]}).get_data(as_text=True)
    assert "Delete 3 inquiries?" in page
    assert page.count('name="ids"') == 3
    post(client, "/admin/inquiries/delete", {"ids": ids[:3], "confirm": "1"})
    assert remaining_ids(db_session) == ids[3:]
    assert audit_entries(db_session) == [("Grace", "deleted", 3, "")]


def test_delete_needs_post_and_csrf(admin_client, db_session, clock):
    (row,) = add_inquiries(db_session, [inquiry(clock)])
    assert admin_client.get("/admin/inquiries/delete").status_code == 405
    assert admin_client.post("/admin/inquiries/delete", data={"ids": [row], "confirm": "1"}).status_code == 400
    assert remaining_ids(db_session) == [row]


def test_delete_with_nothing_selected_or_bad_ids(admin_client):
    response = post(admin_client, "/admin/inquiries/delete", {})
    assert response.status_code == 303
    assert "Select at least one" in admin_client.get("/admin/").get_data(as_text=True)
    assert post(admin_client, "/admin/inquiries/delete", {"ids": ["1; DROP"]}).status_code == 400


def test_held_inquiry_cannot_be_deleted(admin_client, db_session, clock):
    (held,) = add_inquiries(db_session, [inquiry(clock, legal_hold=True)])
    response = post(admin_client, "/admin/inquiries/delete", {"ids": [held], "confirm": "1"})
    assert response.status_code == 303
    assert "cannot be deleted" in admin_client.get(response.headers["Location"]).get_data(as_text=True)
    assert remaining_ids(db_session) == [held]
    assert audit_entries(db_session) == []
    assert "Delete this inquiry" not in admin_client.get(f"/admin/inquiries/{held}").get_data(as_text=True)


def test_bulk_delete_keeps_held_ones_and_says_so(admin_client, db_session, clock):
    free, held = add_inquiries(db_session, [inquiry(clock), inquiry(clock, legal_hold=True)])
    page = post(admin_client, "/admin/inquiries/delete", {"ids": [free, held]}).get_data(as_text=True)
    assert "Delete 1 inquiry?" in page and "on legal hold and will be kept" in page
    post(admin_client, "/admin/inquiries/delete", {"ids": [free, held], "confirm": "1"})
    assert remaining_ids(db_session) == [held]
    assert audit_entries(db_session) == [("Ada", "deleted", 1, "1 on legal hold kept")]


def test_hold_placed_after_confirmation_still_protects(admin_client, db_session, clock):
    (row,) = add_inquiries(db_session, [inquiry(clock)])
    post(admin_client, "/admin/inquiries/delete", {"ids": [row]})
    post(admin_client, f"/admin/inquiries/{row}/hold", {"reason": "court order"})
    post(admin_client, "/admin/inquiries/delete", {"ids": [row], "confirm": "1"})
    assert remaining_ids(db_session) == [row]


def test_expired_inquiry_cannot_be_deleted_by_id(admin_client, db_session, clock):
    (old,) = add_inquiries(db_session, [inquiry(clock, days_old=200)])
    post(admin_client, "/admin/inquiries/delete", {"ids": [old], "confirm": "1"})
    assert audit_entries(db_session) == []


def test_place_and_release_hold_with_reason_and_audit(admin_client, db_session, clock):
    (row,) = add_inquiries(db_session, [inquiry(clock)])
    assert post(admin_client, f"/admin/inquiries/{row}/hold", {"reason": "Case 42"}).status_code == 303
    held = db_session.get(Inquiry, row)
    db_session.refresh(held)
    assert (held.legal_hold, held.hold_reason, held.hold_by, held.held_at) == (True, "Case 42", "Ada", clock())
    page = admin_client.get(f"/admin/inquiries/{row}").get_data(as_text=True)
    assert "Case 42" in page and "Placed by" in page
    # The requests share this test's session (its app context): end the read the page left open,
    # since opening the page marked the inquiry read in a write of its own.
    db_session.rollback()

    assert post(admin_client, f"/admin/inquiries/{row}/release", {}).status_code == 303
    db_session.refresh(held)
    assert (held.legal_hold, held.hold_reason, held.hold_by, held.held_at) == (False, None, None, None)
    assert [entry[:3] for entry in audit_entries(db_session)] == [
        ("Ada", "hold_placed", 1),
        ("Ada", "hold_released", 1),
    ]


def test_hold_needs_a_short_reason(admin_client, db_session, clock):
    (row,) = add_inquiries(db_session, [inquiry(clock)])
    for reason in ("", "   ", "x" * 201):
        response = post(admin_client, f"/admin/inquiries/{row}/hold", {"reason": reason})
        assert response.status_code == 422
        assert 'id="reason-error"' in response.get_data(as_text=True)
    assert db_session.scalar(select(Inquiry.legal_hold).where(Inquiry.id == row)) is False
    assert audit_entries(db_session) == []


def test_hold_keeps_an_expired_inquiry_from_the_cleanup(admin_client, db_session, clock):
    held, free = add_inquiries(db_session, [inquiry(clock, days_old=100), inquiry(clock, days_old=100)])
    post(admin_client, f"/admin/inquiries/{held}/hold", {"reason": "litigation"})
    clock.advance(days=100)
    with admin_client.application.app_context():
        db_session.execute(delete(Inquiry).where(retention.expired(retention.current_cutoff(db_session))))
        db_session.commit()
    assert remaining_ids(db_session) == [held]
    assert admin_client.get(f"/admin/inquiries/{held}").status_code == 200


def test_releasing_an_expired_hold_hides_the_inquiry(admin_client, db_session, clock):
    (row,) = add_inquiries(db_session, [inquiry(clock, days_old=300, legal_hold=True, hold_reason="r", hold_by="Ada")])
    response = post(admin_client, f"/admin/inquiries/{row}/release", {})
    assert response.headers["Location"].endswith("/admin/")
    assert "past retention" in admin_client.get("/admin/").get_data(as_text=True)
    assert admin_client.get(f"/admin/inquiries/{row}").status_code == 404


def test_audit_entries_appear_on_the_cleanup_page_without_message_content(admin_client, db_session, clock):
    ids = add_inquiries(db_session, [inquiry(clock, message="confidential text") for _ in range(2)])
    post(admin_client, "/admin/inquiries/delete", {"ids": ids, "confirm": "1"})
    page = admin_client.get("/admin/cleanup").get_data(as_text=True)
    assert "deleted" in page and "Ada" in page
    assert "confidential" not in page
    assert db_session.scalar(select(func.count()).select_from(AuditEntry)) == 1
