"""Inquiries: retention, the spam defence, search, and deletion that leaves nothing behind."""
