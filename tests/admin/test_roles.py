"""Roles: every admin route as an owner, a responder and a viewer, on a form given to them and on one not.

``MATRIX`` is the answer each role gets, route by route, written out here
(not read from the code) and in docs/inbox.md ("Who may do what"), which a
test keeps equal to it. Refused means 403 and nothing in the database
changed; on an inquiry of a form not given to them, a responder or viewer
gets 404 (it is not there for them) and changes nothing either.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from sqlalchemy import select

from app.admin import policy
from app.auth import permissions, roles
from app.models import (
    Admin,
    AdminLogin,
    AdminRole,
    Attachment,
    AttachmentChunk,
    Delivery,
    Erasure,
    Form,
    InboundMessage,
    Inquiry,
    Passkey,
    Tag,
)
from tests.admin.test_policy import DELETING, FIELDS, endpoint_of
from tests.admin.test_team import STEP_UP_POSTS
from tests.factories import add_file, add_inquiries, inquiry
from tests.helpers import csrf_token, settle, snapshot

OWNER, R, V = "owner", "responder", "viewer"
# endpoint -> the roles it answers (every other role: 403, nothing changed)
MATRIX: dict[str, tuple[str, ...]] = {
    "admin.inbox": (OWNER, R, V),
    "admin.spam": (OWNER, R, V),
    "admin.overview": (OWNER, R, V),
    "admin.dismiss_start": (OWNER,),
    "admin.restore_start": (OWNER,),
    "admin.detail": (OWNER, R, V),
    "admin.download_file": (OWNER, R, V),
    "admin.preview_file": (OWNER, R, V),
    "admin.mark_read": (OWNER, R),
    "admin.mark_unread": (OWNER, R),
    "admin.mark_answered": (OWNER, R),
    "admin.mark_unanswered": (OWNER, R),
    "admin.send_reply": (OWNER, R),
    "admin.reply_states": (OWNER, R, V),
    "admin.not_spam": (OWNER, R),
    "admin.change_state": (OWNER, R),
    "admin.assign": (OWNER, R),
    "admin.change_tags": (OWNER, R),
    "admin.add_note": (OWNER, R),
    "admin.place_hold": (OWNER,),
    "admin.release_hold": (OWNER,),
    "admin.delete_inquiries": (OWNER, R),
    "admin.delete_all_spam": (OWNER, R),
    "admin.export": (OWNER, R),
    "admin.people": (OWNER, R, V),
    "admin.person_export_json": (OWNER, R, V),
    "admin.person_export_csv": (OWNER, R, V),
    "admin.person_export_zip": (OWNER, R, V),
    "admin.person_erase": (OWNER, R),
    "admin.forms": (OWNER,),
    "admin.new_form": (OWNER,),
    "admin.create_form": (OWNER,),
    "admin.edit_form": (OWNER,),
    "admin.change_form": (OWNER,),
    "admin.preview_form": (OWNER,),
    "admin.delete_form": (OWNER,),
    "admin.tags": (OWNER,),
    "admin.create_tag": (OWNER,),
    "admin.delete_tag": (OWNER,),
    "admin.settings_moved": (OWNER,),
    "admin.retention_page": (OWNER,),
    "admin.change_retention": (OWNER,),
    "admin.change_spam_retention": (OWNER,),
    "admin.change_retention_summary": (OWNER,),
    "admin.retention_report": (OWNER,),
    "admin.retention_report_csv": (OWNER,),
    "admin.retention_report_json": (OWNER,),
    "admin.retention_forecast": (OWNER,),
    "admin.notifications": (OWNER,),
    "admin.change_notifications": (OWNER,),
    "admin.rotate_secret": (OWNER,),
    "admin.send_test": (OWNER,),
    "admin.change_chat": (OWNER,),
    "admin.send_again": (OWNER,),
    "admin.cleanup_page": (OWNER,),
    "admin.run_cleanup": (OWNER,),
    "admin.held_messages": (OWNER,),
    "admin.thread_held": (OWNER,),
    "admin.delete_held": (OWNER,),
    "admin.download_held_file": (OWNER,),
    "admin.admins": (OWNER,),
    "admin.change_role": (OWNER,),
    "admin.log_out_everywhere": (OWNER,),
    "admin.remove_admin": (OWNER,),
    "admin.invite": (OWNER,),
    "admin.mark_spam": (OWNER, R),
    "admin.change_spam_words": (OWNER,),
    "admin.allow_site": (OWNER,),
    "admin.account": (OWNER, R, V),
    "admin.change_email": (OWNER, R, V),
    "admin.change_name": (OWNER, R, V),
    "admin.change_language": (OWNER, R, V),
    "admin.revoke_login": (OWNER, R, V),
    "admin.rename_passkey": (OWNER, R, V),
    "admin.remove_passkey": (OWNER, R, V),
}
LAST = DELETING | {"admin.remove_admin", "admin.delete_form", "admin.delete_tag"}  # they take rows others use
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d4944415478da63f8cf00000301010018dd8db00000000049454e44ae426082"
)
DOCS = Path(__file__).parents[2] / "docs" / "inbox.md"


def matrix_table() -> str:
    """The matrix as docs/inbox.md shows it: one row per route, in the policy's order; the last column says
    which need a passkey verified in the last five minutes (``policy.STEP_UP``)."""
    lines = ["| Route | Owner | Responder | Viewer | Fresh passkey |", "| --- | :-: | :-: | :-: | :-: |"]
    for endpoint in policy.POLICY:
        marks = ["yes" if role in MATRIX[endpoint] else "—" for role in (OWNER, R, V)]
        marks.append("yes" if endpoint in policy.STEP_UP else "")
        lines.append(f"| `{_route(endpoint)}` | " + " | ".join(marks) + " |")
    return "\n".join(lines)


def _route(endpoint: str) -> str:
    source = Path(__file__).parents[2] / "app" / "admin" / "policy.py"
    found = re.search(rf'"{re.escape(endpoint)}":.*#\s*(\S+\s+\S+)', source.read_text())
    return found.group(1) if found else endpoint


@pytest.fixture
def team(app, query, login, clock):
    """Two forms (contact, quote); an inquiry with a file on each, spam on each; the owners Ada and Grace; one
    login per role, each given the quote form. Returns ``walk(role)``'s ingredients."""
    ada = login("Ada", as_client=app.test_client())
    grace = login("Grace", as_client=app.test_client())

    def rows(session):
        contact = session.get(Form, 1)
        quote = Form(slug="quote", title={"en": "Quote"}, fields=contact.fields, email_field=contact.email_field)
        session.add(quote)
        session.flush()
        ids = add_inquiries(
            session,
            [
                inquiry(clock, form_id=quote.id),
                inquiry(clock, form_id=quote.id, status="spam"),
                inquiry(clock, name="Other", form_id=1),
                inquiry(clock, form_id=1, status="spam"),
            ],
        )
        files = [
            add_file(session, ids[0], PNG, "dot.png", "image/png"),
            add_file(session, ids[2], PNG, "dot.png", "image/png"),
        ]
        tag = Tag(name="urgent")
        held = [
            InboundMessage(
                inquiry_id=ids[0],
                state="held",
                kind="message",
                sender="ada@work.example",
                sender_name="",
                subject="Hello",
                body="Hi",
                files_refused=0,
                received_at=clock(),
            )
            for _each in range(3)
        ]
        failed = Delivery(
            inquiry_id=ids[0], channel="slack", kind="inquiry", status="failed", attempts=1,
            next_attempt_at=clock(), idempotency_key="msg_roles", created_at=clock(), finished_at=clock(),
        )  # fmt: skip
        session.add_all([tag, *held, failed])
        session.flush()
        held_file = Attachment(
            held_message_id=held[2].id, field_key=f"mail:{held[2].id}", name="dot.png", content_type="image/png",
            size=len(PNG),
        )  # fmt: skip
        session.add(held_file)
        session.flush()
        session.add(AttachmentChunk(attachment_id=held_file.id, seq=0, data=PNG))
        session.commit()
        return {
            "admin.download_held_file:message_id": held[2].id,
            "admin.download_held_file:attachment_id": held_file.id,
            "delivery_id": failed.id,
            "message_id": held[0].id,
            "admin.delete_held:message_id": held[1].id,
            "quote": quote.id,
            "mine": ids[0],
            "my_spam": ids[1],
            "other": ids[2],
            "other_spam": ids[3],
            "my_file": files[0],
            "other_file": files[1],
            "tag_id": tag.id,
        }

    made = query.using(rows)
    return ada, grace, made


def as_role(app, login, query, role: str, quote: int):
    """A client logged in as a new admin of ``role`` given the quote form, with a second login and two passkeys."""
    client = app.test_client()
    admin = login(f"{role.title()} Admin", as_client=client)
    login(admin=admin, as_client=app.test_client())  # a second browser, for the revoke route

    def give(session):
        row = session.get(Admin, admin.id)
        roles.give(session, row, AdminRole(role), [quote])
        for name in ("Laptop", "Phone"):
            session.add(Passkey(admin_id=admin.id, credential_id=os.urandom(16), public_key=b"key", name=name))
        session.commit()
        passkey = session.scalar(select(Passkey.id).where(Passkey.admin_id == admin.id).order_by(Passkey.id))
        second = list(
            session.scalars(select(AdminLogin.id).where(AdminLogin.admin_id == admin.id).order_by(AdminLogin.id))
        )[-1]
        return passkey, second

    passkey, second = query.using(give)
    return client, admin, passkey, second


def routes(app, ids: dict) -> list[tuple[str, str, str]]:
    """(endpoint, method, URL) of every admin route, ids filled in, those that take shared rows last."""
    found = []
    for rule in app.url_map.iter_rules():
        if rule.rule.startswith("/admin"):
            # An endpoint may have rows of its own (``"<endpoint>:<variable>"``): one held message is threaded,
            # another deleted.
            url = re.sub(
                r"<(?:\w+:)?(\w+)>",
                lambda match, endpoint=rule.endpoint: str(ids.get(f"{endpoint}:{match.group(1)}", ids[match.group(1)])),
                rule.rule,
            )
            found += [(endpoint_of(app, url, method), method, url) for method in sorted(rule.methods)]
    return sorted(found, key=lambda route: route[0] in LAST)


def send(client, method: str, url: str, token: str, ids: dict):
    data = {
        **FIELDS,
        "csrf_token": token,
        "ids": [str(ids["inquiry_id"]), str(ids["spam_id"])],
        "tags": str(ids["tag_id"]),
        "admin_id": str(ids["admin_id"]),
        "forms": str(ids["quote"]),
        "email": "ada@example.com",
        "role": "responder",
    }
    return client.open(
        url,
        method=method,
        data=data if method == "POST" else None,
        headers={"X-CSRFToken": token, "Accept": "text/html"},
    )


@pytest.mark.parametrize("role", [OWNER, R, V])
def test_every_route_answers_each_role_as_the_matrix_says(app, team, query, login, role):
    _ada, grace, made = team
    client, _admin, passkey, second = as_role(app, login, query, role, made["quote"])
    ids = {
        **made,
        "inquiry_id": made["mine"],
        "spam_id": made["my_spam"],
        "attachment_id": made["my_file"],
        "admin_id": grace.id,
        "passkey_id": passkey,
        "login_id": second,
        "form_id": made["quote"],
    }
    token = csrf_token(client, "/admin/account")
    settle(app)
    answered = refused = 0
    for endpoint, method, url in routes(app, ids):
        before = snapshot(query, skip=("inquiry_views", "accesses"))
        response = send(client, method, url, token, ids)
        if role in MATRIX[endpoint]:
            assert response.status_code not in (403, 404, 500), (endpoint, method, response.status_code)
            answered += 1
            continue
        assert response.status_code == 403, (endpoint, method, response.status_code)
        settle(app)
        assert snapshot(query, skip=("inquiry_views", "accesses")) == before, (endpoint, method)
        refused += 1
    assert answered and (refused or role == OWNER)


@pytest.mark.parametrize("role", [R, V])
def test_an_inquiry_of_a_form_not_given_is_not_there_and_nothing_changes(app, team, query, login, role):
    _ada, grace, made = team
    client, _admin, passkey, second = as_role(app, login, query, role, made["quote"])
    ids = {
        **made,
        "inquiry_id": made["other"],
        "spam_id": made["other_spam"],
        "attachment_id": made["other_file"],
        "admin_id": grace.id,
        "passkey_id": passkey,
        "login_id": second,
        "form_id": 1,
    }
    token = csrf_token(client, "/admin/account")
    settle(app)
    for endpoint, method, url in routes(app, ids):
        if method not in ("GET", "POST") or ("inquiries/" not in url and endpoint != "admin.not_spam"):
            continue
        before = snapshot(query, skip=("inquiry_views",))
        response = send(client, method, url, token, ids)
        settle(app)
        assert response.status_code in (303, 403, 404), (endpoint, method, response.status_code)
        if "/inquiries/" in url and "delete" not in url:
            assert response.status_code in (403, 404), (endpoint, method)
        assert snapshot(query, skip=("inquiry_views",)) == before, (endpoint, method)


def test_a_scoped_admin_sees_only_their_forms_in_lists_counts_search_export_and_people(app, team, query, login):
    _ada, _grace, made = team
    client, *_rest = as_role(app, login, query, R, made["quote"])
    inbox = client.get("/admin/").get_data(as_text=True)
    assert f"/admin/inquiries/{made['mine']}" in inbox and f"/admin/inquiries/{made['other']}" not in inbox
    assert "1 inquiry" in inbox
    found = client.get("/admin/?q=Other").get_data(as_text=True)
    assert f"/admin/inquiries/{made['other']}" not in found
    spam = client.get("/admin/spam").get_data(as_text=True)
    assert f"/admin/inquiries/{made['my_spam']}" in spam and f"/admin/inquiries/{made['other_spam']}" not in spam
    exported = client.get("/admin/export.csv").get_data(as_text=True)
    assert exported.count("\n") == 2 and "Other" not in exported  # the header and the one inquiry
    people = client.get("/admin/people?email=ada@example.com").get_data(as_text=True)
    assert 'id="people-scope"' in people and "quote" in people
    assert f'id="inquiry-{made["mine"]}"' in people and f'id="inquiry-{made["other"]}"' not in people
    assert client.get(f"/admin/inquiries/{made['other']}").status_code == 404
    assert client.get(f"/admin/inquiries/{made['other']}/files/{made['other_file']}").status_code == 404
    token = csrf_token(client, "/admin/spam")
    client.post("/admin/spam/delete-all", data={"confirm": "1", "through": "999", "csrf_token": token})
    left = query.using(lambda session: set(session.scalars(select(Inquiry.id))))
    assert made["my_spam"] not in left and made["other_spam"] in left


def test_a_scoped_erasure_reaches_only_their_forms_and_its_record_says_which(app, team, query, login):
    _ada, _grace, made = team
    client, *_rest = as_role(app, login, query, R, made["quote"])
    token = csrf_token(client, "/admin/people")
    response = client.post(
        "/admin/people/erase", data={"email": "ada@example.com", "confirm": "1", "csrf_token": token}
    )
    assert response.status_code == 303
    kept = query.using(lambda session: sorted(session.scalars(select(Inquiry.id))))
    assert made["mine"] not in kept and made["my_spam"] not in kept
    assert made["other_spam"] in kept  # another form's: not theirs to erase
    assert query.using(lambda session: session.scalar(select(Erasure.form_ids))) == [made["quote"]]


def test_the_matrix_is_the_one_in_the_docs_and_covers_every_route():
    assert set(MATRIX) == set(policy.POLICY)
    assert matrix_table() in DOCS.read_text(), "docs/inbox.md: paste tests.admin.test_roles.matrix_table()"


def test_the_fresh_passkey_column_is_the_step_up_test_s_list(app):
    """The routes the step-up test refuses without a fresh passkey are the ones the policy (and the docs' last
    column) name."""
    asked = {endpoint_of(app, path.format(other=1, key=1), "POST") for path in STEP_UP_POSTS}
    assert asked == set(policy.STEP_UP)


def test_the_roles_in_the_code_give_what_the_matrix_says(app):
    for endpoint, needed in policy.POLICY.items():
        holding = {role.value for role, held in permissions.ROLES.items() if needed in held}
        assert holding == set(MATRIX[endpoint]), endpoint
