"""Small helpers shared by the tests."""

from __future__ import annotations

import re

CSRF_INPUT = re.compile(r'name="csrf_token" value="([^"]+)"')


def csrf_token(client, path: str = "/") -> str:
    """The CSRF token from the form at ``path``."""
    page = client.get(path).get_data(as_text=True)
    match = CSRF_INPUT.search(page)
    assert match, f"no CSRF token on {path}"
    return match.group(1)


VALID = {"name": "Ada Lovelace", "email": "ada@example.com", "message": "Hello,\nI have a question."}
