"""Fixtures for the pages under /admin: inbox, detail, actions, admins, export, retention, notifications, authorisation.

The shared ones (databases, app, client, login) are in tests/conftest.py.
"""
