"""The forecast on the Retention page, on a form's page, and as the owners' JSON."""

from __future__ import annotations

from sqlalchemy import select

from app.auth import roles
from app.inquiries import forecast_store
from app.models import Admin, AdminRole, Form, Setting
from tests.factories import add_inquiries, inquiry
from tests.helpers import settle


def test_the_retention_page_asks_for_the_forecast_then_draws_it_with_its_table(app, admin_client, db_session, clock):
    add_inquiries(db_session, [inquiry(clock, days_old=179), inquiry(clock, days_old=179)])
    page = admin_client.get("/admin/retention").get_data(as_text=True)
    assert "The forecast is being computed" in page
    with app.test_request_context():
        forecast_store.store()
    db_session.rollback()  # the requests share this session (its app context): a fresh snapshot
    page = admin_client.get("/admin/retention").get_data(as_text=True)
    assert '<svg class="chart"' in page and 'role="img"' in page
    assert "style=" not in page and "<script>" not in page
    assert 'id="forecast-days"' in page and 'id="forecast-months"' in page and 'id="forecast-forms"' in page
    assert "2 in the next 30 days" in page
    form_page = admin_client.get("/admin/forms/1").get_data(as_text=True)
    assert 'id="form-forecast-days"' in form_page and "2 in the next 30 days" in form_page


def test_the_json_is_computed_when_none_is_current(admin_client, db_session, clock):
    add_inquiries(db_session, [inquiry(clock, days_old=179)])
    data = admin_client.get("/admin/retention/forecast.json").get_json()
    inbox = next(line for line in data["lines"] if line["form_id"] == 1 and line["policy"] == "inbox")
    assert data["today"] == "2026-06-01" and inbox["days"][1] == {
        "start": "2026-06-02",
        "inquiries": 1,
        "files": 0,
        "bytes": 0,
    }
    assert len(inbox["days"]) == 30 and len(inbox["months"]) == 12


def test_the_json_is_for_owners_only(app, login, query):
    login("Ada", as_client=app.test_client())  # an owner stays
    viewer = login("Vic", as_client=app.test_client())
    client = app.test_client()
    login(admin=viewer, as_client=client)

    def demote(session):
        roles.give(session, session.get(Admin, viewer.id), AdminRole.VIEWER, [1])
        session.commit()

    query.using(demote)
    assert client.get("/admin/retention/forecast.json").status_code == 403


def test_a_page_with_no_forecast_asks_for_one_after_its_response(app, admin_client, query):
    admin_client.get("/admin/retention").close()  # the response's close hands the refresh to the runner
    settle(app)
    assert query(select(Setting.key).where(Setting.key == forecast_store.KEY)) == [forecast_store.KEY]


def test_forms_that_anonymise_are_labelled_so_on_the_pages_and_in_the_json(app, admin_client, db_session, clock):
    form = Form(slug="survey", title={"en": "Survey"}, fields=[], retention_days=30, expiry_action="anonymise")
    db_session.add(form)
    db_session.commit()
    add_inquiries(db_session, [inquiry(clock, days_old=25, form_id=form.id), inquiry(clock, days_old=179)])
    with app.test_request_context():
        forecast_store.store()
    db_session.rollback()
    page = admin_client.get("/admin/retention").get_data(as_text=True)
    assert "What the cleanup will delete or anonymise" in page and 'id="forecast-anonymised"' in page
    assert page.count('<th scope="col">Anonymised</th>') == 2  # the days' table and the months'
    row = page.split('id="forecast-forms"')[1].split("Survey")[1].split("</tr>")[0]
    assert "anonymised, not deleted" in row
    assert "anonymised, not deleted" not in page.split('id="forecast-forms"')[1].split("Survey")[0]
    form_page = admin_client.get(f"/admin/forms/{form.id}").get_data(as_text=True)
    legend = form_page.split('id="form-forecast-anonymised"')[1].split("</li>")[0]
    assert "Anonymised, not deleted: 1 in the next 30 days" in legend
    contact_page = admin_client.get("/admin/forms/1").get_data(as_text=True)
    assert "What the cleanup will delete</h2>" in contact_page and "forecast-anonymised" not in contact_page
    data = admin_client.get("/admin/retention/forecast.json").get_json()
    actions = {(line["form_id"], line["policy"]): line["action"] for line in data["lines"]}
    assert actions[form.id, "inbox"] == "anonymise" and actions[form.id, "spam"] == "delete"
    assert actions[1, "inbox"] == "delete"
