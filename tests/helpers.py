"""Small helpers shared by the tests."""

from __future__ import annotations

import re

from app import background

CSRF_INPUT = re.compile(r'name="csrf_token" value="([^"]+)"')


def csrf_token(client, path: str = "/") -> str:
    """The CSRF token from the form at ``path``."""
    page = client.get(path).get_data(as_text=True)
    match = CSRF_INPUT.search(page)
    assert match, f"no CSRF token on {path}"
    return match.group(1)


def settle(app, timeout: float = 30) -> None:
    """Wait until ``app``'s background runner has nothing pending or running (work after responses)."""
    assert background.runner_of(app).wait_idle(timeout), "background work did not finish"


VALID = {"name": "Ada Lovelace", "email": "ada@example.com", "message": "Hello,\nI have a question."}


def submit_inquiry(client) -> int:
    """POST a valid JSON inquiry and wait for the work after it; the status code.

    Closing the response hands the cleanup to the runner, as a server does.
    """
    with client.post("/api/inquiries", json=VALID) as response:
        status = response.status_code
    settle(client.application)
    return status
