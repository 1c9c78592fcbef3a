"""app.inquiries.spam's own ALTCHA v2 verification, checked against the altcha package as the oracle.

``check_solution`` verifies without the package (one JSON decode, two HMACs);
here the package's solver makes the solutions and its ``verify_solution``
says which payloads are valid: ours accepts exactly what it accepts, for
every member tampered with, and anything malformed is a reason, never an
exception. Most of these need no database; the last ones file inquiries on
both.
"""

from __future__ import annotations

import base64
import copy
import json

import altcha
import pytest
from sqlalchemy import select

from app import create_app
from app.inquiries import spam
from app.models import Inquiry, InquiryStatus, UsedChallenge
from tests.conftest import FakeClock
from tests.helpers import VALID, solution

SECRET = "verify-secret-key-long-enough-for-production"
WRONG_TYPES = [None, True, 0, 1.5, "x", "", [], {}, ["a"], {"a": 1}]


def app_without_database(path, secret: str = SECRET, clock=None):
    """An app for checks that need no database: its database file is never opened."""
    return create_app(
        {
            "ENV": "production",
            "SECRET_KEY": secret,
            "DATABASE_URL": f"sqlite:///{path}",
            "ORIGIN": "http://localhost",
            "RP_ID": "localhost",
            "CLOCK": clock or FakeClock(),
            "POW_MAX_NUMBER": 50,
        }
    )


@pytest.fixture(scope="module")
def verifier(tmp_path_factory):
    """An app whose proof-of-work is checked in a request context."""
    path = tmp_path_factory.mktemp("verify") / "unused.db"
    app = app_without_database(path)
    with app.test_request_context():
        yield app
    assert not path.exists()


def solved_payload() -> dict:
    """A challenge we issue, solved by the package's solver, as the decoded payload."""
    challenge = altcha.Challenge.from_dict(spam.issue())
    return altcha.Payload(challenge, altcha.solve_challenge(challenge)).to_dict()


def encoded(data) -> str:
    return base64.b64encode(json.dumps(data).encode()).decode()


def package_verifies(raw: str) -> bool:
    """The oracle: the altcha package's verdict with our keys (its expiry check is unused: we sign none)."""
    challenge_key, key_key = spam._keys(SECRET)
    return altcha.verify_solution(raw, challenge_key, hmac_key_secret=key_key).verified


def tampered(payload: dict, path: tuple, value) -> dict:
    """``payload`` with the member at ``path`` set to ``value`` (or removed, for ``REMOVE``)."""
    changed = copy.deepcopy(payload)
    parent = changed
    for key in path[:-1]:
        parent = parent[key]
    if value is REMOVE:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return changed


REMOVE = object()
PARAMETERS, SOLUTION = ("challenge", "parameters"), ("solution",)


def flipped(text: str) -> str:
    """``text`` with its last hex digit changed."""
    return text[:-1] + ("0" if text[-1] != "0" else "1")


# Tampered members: (name, path, how to change the value). Each ``how`` takes the original value.
TAMPERS = [
    ("signature changed", ("challenge", "signature"), flipped),
    ("signature in capitals", ("challenge", "signature"), str.upper),
    ("signature removed", ("challenge", "signature"), lambda _: REMOVE),
    ("signature empty", ("challenge", "signature"), lambda _: ""),
    ("algorithm", (*PARAMETERS, "algorithm"), lambda _: "PBKDF2/SHA-512"),
    ("algorithm SHA", (*PARAMETERS, "algorithm"), lambda _: "SHA-256"),
    ("cost lowered", (*PARAMETERS, "cost"), lambda _: 1),
    ("cost as a float", (*PARAMETERS, "cost"), float),
    ("cost as a string", (*PARAMETERS, "cost"), str),
    ("cost not integral", (*PARAMETERS, "cost"), lambda cost: cost + 0.5),
    ("salt changed", (*PARAMETERS, "salt"), flipped),
    ("salt with a quote", (*PARAMETERS, "salt"), lambda salt: salt + '"'),
    ("salt with a backslash", (*PARAMETERS, "salt"), lambda salt: salt + "\\"),
    ("salt with a control character", (*PARAMETERS, "salt"), lambda salt: salt + "\n"),
    ("salt with a lone surrogate", (*PARAMETERS, "salt"), lambda salt: salt + "\ud800"),
    ("nonce changed", (*PARAMETERS, "nonce"), flipped),
    ("nonce removed", (*PARAMETERS, "nonce"), lambda _: REMOVE),
    ("key prefix changed", (*PARAMETERS, "keyPrefix"), flipped),
    ("key prefix removed", (*PARAMETERS, "keyPrefix"), lambda _: REMOVE),
    ("key length changed", (*PARAMETERS, "keyLength"), lambda _: 16),
    ("key length removed (the default)", (*PARAMETERS, "keyLength"), lambda _: REMOVE),
    ("key signature changed", (*PARAMETERS, "keySignature"), flipped),
    ("key signature removed", (*PARAMETERS, "keySignature"), lambda _: REMOVE),
    ("expiry later", (*PARAMETERS, "data", "expires"), lambda expires: expires + 1),
    ("expiry as a float", (*PARAMETERS, "data", "expires"), float),
    ("expiry as a string", (*PARAMETERS, "data", "expires"), str),
    ("expiry beyond safe integers", (*PARAMETERS, "data", "expires"), lambda _: 2**60),
    ("data gains a member", (*PARAMETERS, "data", "extra"), lambda _: 1),
    ("data removed", (*PARAMETERS, "data"), lambda _: REMOVE),
    ("data null", (*PARAMETERS, "data"), lambda _: None),
    ("expiresAt added", (*PARAMETERS, "expiresAt"), lambda _: 4102444800),
    ("expiresAt null", (*PARAMETERS, "expiresAt"), lambda _: None),
    ("memoryCost added", (*PARAMETERS, "memoryCost"), lambda _: 1),
    ("parallelism added", (*PARAMETERS, "parallelism"), lambda _: 1),
    ("unknown parameter added", (*PARAMETERS, "unsigned"), lambda _: "ignored"),
    ("unknown challenge member added", ("challenge", "unsigned"), lambda _: 1),
    ("unknown payload member added", ("unsigned",), lambda _: 1),
    ("counter changed", (*SOLUTION, "counter"), lambda counter: counter + 1),
    ("counter a string", (*SOLUTION, "counter"), lambda _: "any"),
    ("counter removed", (*SOLUTION, "counter"), lambda _: REMOVE),
    ("derived key changed", (*SOLUTION, "derivedKey"), flipped),
    ("derived key in capitals", (*SOLUTION, "derivedKey"), str.upper),
    ("derived key with a space", (*SOLUTION, "derivedKey"), lambda key: f"{key[:2]} {key[2:]}"),
    ("derived key not hex", (*SOLUTION, "derivedKey"), lambda key: "zz" + key[2:]),
    ("derived key odd length", (*SOLUTION, "derivedKey"), lambda key: key[:-1]),
    ("derived key non-ASCII", (*SOLUTION, "derivedKey"), lambda key: key[:-2] + "é1"),
    ("derived key empty", (*SOLUTION, "derivedKey"), lambda _: ""),
    ("derived key removed", (*SOLUTION, "derivedKey"), lambda _: REMOVE),
    ("time removed", (*SOLUTION, "time"), lambda _: REMOVE),
]


def test_solutions_of_the_packages_solver_verify_with_ours(verifier):
    for _ in range(20):
        raw = encoded(solved_payload())
        verdict = spam.check_solution(raw)
        assert package_verifies(raw)
        assert (
            verdict.reason is None and verdict.signature == json.loads(base64.b64decode(raw))["challenge"]["signature"]
        )


def test_a_payload_as_the_package_encodes_it_verifies(verifier):
    challenge = altcha.Challenge.from_dict(spam.issue())
    raw = altcha.Payload(challenge, altcha.solve_challenge(challenge)).to_base64()
    assert spam.check_solution(raw).reason is None


@pytest.mark.parametrize(("name", "path", "change"), TAMPERS, ids=[name for name, _, _ in TAMPERS])
def test_a_tampered_member_is_refused_exactly_when_the_package_refuses_it(verifier, name, path, change):
    payload = solved_payload()
    original = payload
    for key in path:
        original = original.get(key) if isinstance(original, dict) else None
    raw = encoded(tampered(payload, path, change(original)))
    verdict = spam.check_solution(raw)
    assert (verdict.reason is None) == package_verifies(raw), (name, verdict)
    assert verdict.reason in (None, spam.Reason.INVALID, spam.Reason.MALFORMED)


def member_paths(value, prefix=()):
    """Every member's path in a decoded payload, depth first."""
    for key, item in value.items():
        yield (*prefix, key)
        if isinstance(item, dict):
            yield from member_paths(item, (*prefix, key))


def test_any_member_of_any_type_is_judged_as_the_package_judges_it_never_an_exception(verifier):
    payload = solved_payload()
    for path in member_paths(payload):
        for value in [*WRONG_TYPES, REMOVE]:
            raw = encoded(tampered(payload, path, value))
            verdict = spam.check_solution(raw)
            assert (verdict.reason is None) == package_verifies(raw), (path, value, verdict)


@pytest.mark.parametrize(
    "raw",
    [
        "not base64 !",
        "YQ",
        base64.b64encode(b"\xff\xfe").decode(),
        encoded("a string"),
        encoded([1]),
        encoded(None),
        base64.b64encode(b"{").decode(),
        base64.b64encode(b"[" * 5000).decode(),
        base64.b64encode(b'{"challenge": ' + b"1" * 5000 + b"}").decode(),
        "é",
        "\ud800",
        encoded({"challenge": {"parameters": {}}, "solution": {}}),
        encoded({"challenge": [], "solution": {}}),
        encoded({"challenge": {"parameters": [], "signature": "a"}, "solution": {"counter": 0, "derivedKey": ""}}),
        encoded({"solution": {}}),
        12345,
        ["a"],
        {"challenge": 1},
        1.5,
        True,
    ],
)
def test_a_malformed_payload_is_malformed_never_an_exception(verifier, raw):
    assert spam.check_solution(raw).reason == spam.Reason.MALFORMED


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ((*PARAMETERS, "cost"), "100"),
        ((*PARAMETERS, "salt"), 5),
        ((*PARAMETERS, "keySignature"), None),
        ((*PARAMETERS, "data"), []),
        ((*PARAMETERS, "data", "expires"), "soon"),
        ((*SOLUTION, "derivedKey"), 7),
        ((*SOLUTION,), "key"),
        (("challenge",), None),
    ],
)
def test_a_member_of_the_wrong_type_is_malformed(verifier, path, value):
    assert spam.check_solution(encoded(tampered(solved_payload(), path, value))).reason == spam.Reason.MALFORMED


@pytest.mark.parametrize(
    ("path", "change"),
    [
        (("challenge", "signature"), flipped),
        ((*PARAMETERS, "salt"), flipped),
        ((*PARAMETERS, "data", "expires"), lambda expires: expires + 600),
        ((*SOLUTION, "derivedKey"), flipped),
        ((*PARAMETERS, "memoryCost"), lambda _: 1),
    ],
)
def test_a_wrong_signature_or_key_is_invalid(verifier, path, change):
    payload = solved_payload()
    original = payload
    for key in path:
        original = original.get(key)
    assert spam.check_solution(encoded(tampered(payload, path, change(original)))).reason == spam.Reason.INVALID


def test_no_solution_is_no_solution(verifier):
    assert spam.check_solution("").reason == spam.Reason.NO_SOLUTION
    assert spam.check_solution(None).reason == spam.Reason.NO_SOLUTION


def test_the_expiry_signed_into_data_is_checked_with_the_apps_clock(verifier):
    clock = verifier.config["CLOCK"]
    issued_at = clock()
    raw = encoded(solved_payload())
    try:
        clock.advance(seconds=599)
        assert spam.check_solution(raw).reason is None
        clock.advance(seconds=1)
        assert spam.check_solution(raw).reason == spam.Reason.EXPIRED
        assert package_verifies(raw)  # the package cannot see it: the app's clock is ours
    finally:
        clock.moment = issued_at  # the module's other tests share this app


def test_a_challenge_signed_with_another_secret_is_invalid(verifier, tmp_path):
    other = app_without_database(
        tmp_path / "unused.db", "another-secret-long-enough-for-production", verifier.config["CLOCK"]
    )
    with other.test_request_context():
        raw = encoded(solved_payload())
    assert spam.check_solution(raw).reason == spam.Reason.INVALID


# --- on both databases: what the once-only insert keys on ------------------------------


def reencoded(raw: str) -> str:
    """The same solution written differently: members the package ignores, a key in capitals, a float cost."""
    payload = json.loads(base64.b64decode(raw))
    payload["solution"]["derivedKey"] = payload["solution"]["derivedKey"].upper()
    payload["challenge"]["parameters"]["cost"] = float(payload["challenge"]["parameters"]["cost"])
    payload["unsigned"] = "x"
    return encoded(payload)


def test_a_reencoded_solution_still_counts_once(client, query):
    raw = solution(client)
    for payload in (raw, reencoded(raw)):
        assert client.post("/api/inquiries", json={**VALID, "altcha": payload}).status_code == 201
    assert query(select(Inquiry.status).order_by(Inquiry.id)) == [InquiryStatus.INBOX, InquiryStatus.SPAM]
    assert query.count(UsedChallenge) == 1


def test_a_reencoded_solution_verifies_first_time(client, query):
    assert client.post("/api/inquiries", json={**VALID, "altcha": reencoded(solution(client))}).status_code == 201
    assert query(select(Inquiry.status)) == [InquiryStatus.INBOX]
