"""The web layer: public pages and APIs, machine endpoints, health, errors, security headers, intake."""
