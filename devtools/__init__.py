"""Tools the tests and the benchmarks share, used from the source tree (never installed).

* ``pgcluster``: a throwaway PostgreSQL cluster on 127.0.0.1.
* ``server``: a real gunicorn server in a subprocess.
* ``admins``: a logged-in admin without a passkey ceremony, in-process or for a real server.
* ``realistic``: realistic inquiry rows for benchmarks and load tests.

Nothing here is imported by ``app``; ``pyproject.toml`` installs ``app`` only.
"""
