"""Fixtures for inquiries: retention, search, the spam defence, deletion that leaves nothing behind.

The shared ones (databases, app, client, login) are in tests/conftest.py.
"""
