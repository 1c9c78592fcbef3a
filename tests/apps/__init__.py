"""Small WSGI modules and scripts that build the app with test-only wiring, for real servers."""
