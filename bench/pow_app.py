"""The bench's deliberately broken variant: a server that verifies every solution ten more times.

``python -m bench.pow`` runs it as its control: the throughput ratio must
fall below its goal against this server, or the measurement could not see a
verification gone slow (about 1 ms of CPU more per submission here).
Production code is unchanged: the extra work is wrapped around
``app.spam.check_solution`` here, for this app only.
"""

from __future__ import annotations

from app import create_app, spam

EXTRA_CHECKS = 10
_check = spam.check_solution


def _slow_check(raw):
    for _ in range(EXTRA_CHECKS):
        _check(raw)
    return _check(raw)


spam.check_solution = _slow_check
app = create_app()
