"""The short browser name shown for each session."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.auth.browser import UNKNOWN, browser_name

AGENTS = {
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/156.0.0.0 Safari/537.36": "Chrome 156 on Linux",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 "
    "Edg/131.0.2903.86": "Edge 131 on Windows",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 "
    "Safari/605.1.15": "Safari 18 on macOS",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 "
    "Mobile/15E148 Safari/604.1": "Safari 18 on iOS",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "CriOS/126.0.6478.153 Mobile/15E148 Safari/604.1": "Chrome 126 on iOS",
    "Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0": "Firefox 133 on Linux",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.6778.104 "
    "Mobile Safari/537.36": "Chrome 131 on Android",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36 "
    "OPR/115.0.0.0": "Opera 115 on Windows",
    "Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/131.0.0.0 Safari/537.36": "Chrome 131 on ChromeOS",
}


@pytest.mark.parametrize("agent, expected", AGENTS.items())
def test_common_browsers_get_a_short_name(agent, expected):
    assert browser_name(agent) == expected


@pytest.mark.parametrize("agent", [None, "", "curl/8.5.0", "python-requests/2.32"])
def test_unknown_agents_are_named_plainly(agent):
    assert browser_name(agent) == UNKNOWN


def test_a_known_system_with_an_unknown_browser():
    assert browser_name("SomeBot/1.0 (Windows NT 10.0)") == "Unknown browser on Windows"


@given(st.text(max_size=400))
def test_any_agent_gives_a_short_name(agent):
    name = browser_name(agent)
    assert 0 < len(name) <= 100
