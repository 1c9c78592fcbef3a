"""Inquiries: the intake (``submit``, ``store``), retention, the spam defence, search, and deletion that leaves
nothing behind."""
