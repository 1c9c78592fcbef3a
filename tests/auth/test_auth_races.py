"""Races and junk: one link makes one admin, one counter value makes one session, no 500s."""

from __future__ import annotations

import threading

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.models import Admin, AdminLogin, Passkey
from tests.softauthn import PasskeyBrowser, invite


def race(*calls) -> list[int]:
    """Run the calls at the same moment in threads; their status codes, sorted."""
    barrier = threading.Barrier(len(calls))
    statuses = []

    def run(call):
        barrier.wait()
        statuses.append(call().status_code)

    threads = [threading.Thread(target=run, args=(call,)) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sorted(statuses)


def prepared_enrollment(app, path: str):
    """A browser that has opened ``path`` and holds a created credential; returns the final POST."""
    browser = PasskeyBrowser(app, app.test_client())
    browser.client.get(path)
    options = browser.post_json(f"{path}/options").get_json()
    body = {"credential": browser.authenticator.create(options, browser.origin)}
    headers = {"X-CSRFToken": browser.csrf_token()}
    return lambda: browser.client.post(f"{path}/verify", json=body, headers=headers)


def test_one_link_redeemed_twice_at_once_makes_one_admin(app, query):
    path = invite(app, "Ada").removeprefix("http://localhost")
    first, second = prepared_enrollment(app, path), prepared_enrollment(app, path)
    assert race(first, second) == [200, 410]
    assert query.count(Admin) == 1 and query.count(Passkey) == 1 and query.count(AdminLogin) == 1


def test_a_cloned_counter_value_logs_in_only_once(app, client, query):
    ada = PasskeyBrowser(app, client)
    assert ada.enroll(invite(app, "Ada")).status_code == 200
    ada.logout()
    clone = PasskeyBrowser(app, app.test_client(), ada.authenticator)
    calls = []
    for browser in (ada, clone):
        options = browser.login_options()
        assertion = browser.authenticator.get(options, browser.origin, sign_count=7)
        headers = {"X-CSRFToken": browser.csrf_token()}
        calls.append(
            lambda b=browser, a=assertion, h=headers: b.client.post(
                "/auth/login/verify", json={"credential": a}, headers=h
            )
        )
    assert race(*calls) == [200, 400]
    assert query.count(AdminLogin) == 1


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=12), inner, max_size=3),
    max_leaves=8,
)
credentials = st.fixed_dictionaries(
    {},
    optional={
        "id": json_values,
        "rawId": json_values | st.just("AAAA"),
        "type": st.just("public-key"),
        "response": st.dictionaries(
            st.sampled_from(
                ["clientDataJSON", "authenticatorData", "signature", "userHandle", "attestationObject", "transports"]
            ),
            json_values | st.just("AAAA"),
            max_size=5,
        ),
    },
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(credential=credentials | json_values)
def test_junk_responses_are_refused_with_400_never_500(app, client, credential, query):
    browser = PasskeyBrowser(app, client)
    browser.login_options()
    response = browser.post_json("/auth/login/verify", {"credential": credential})
    assert response.status_code == 400, response.get_data(as_text=True)
    assert query.count(AdminLogin) == 0
