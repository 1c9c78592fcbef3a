"""Fixtures for the project as a whole: structure, packaging, dependencies, deployment, migrations, scale-out.

The shared ones (databases, app, client, login) are in tests/conftest.py.
"""
