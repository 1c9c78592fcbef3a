"""The bench's deliberately broken variant: a server whose verification costs about 1 ms of CPU more.

``python -m bench.pow`` runs it as its control: the throughput ratio must
fall below its goal against this server, or the measurement could not see a
verification gone slow. The extra work is ten verifications by the altcha
package's ``verify_solution`` (what ``app.inquiries.spam`` used before it verified with
its own two HMACs), so the control adds what it added before, not ten times
the now smaller cost. Production code is unchanged: the extra work is
wrapped around ``app.inquiries.spam.check_solution`` here, for this app only.
"""

from __future__ import annotations

import contextlib

import altcha
from flask import current_app

from app import create_app
from app.inquiries import spam

EXTRA_CHECKS = 10
_check = spam.check_solution


def _slow_check(raw):
    challenge_key, key_key = spam._keys(current_app.config["SECRET_KEY"])
    for _ in range(EXTRA_CHECKS):
        with contextlib.suppress(ValueError, KeyError, TypeError, AttributeError, RecursionError):
            altcha.verify_solution(altcha.Payload.from_base64(raw), challenge_key, hmac_key_secret=key_key)
    return _check(raw)


spam.check_solution = _slow_check
app = create_app()
