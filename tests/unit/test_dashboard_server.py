"""Which Host headers the dashboard answers: its own addresses, not another site's
name pointed at it (DNS rebinding)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler.dashboard.server import host_allowed


@pytest.mark.parametrize(
    ("host", "bound", "allowed"),
    [
        ("127.0.0.1:8080", "127.0.0.1", True),
        ("127.0.0.1", "127.0.0.1", True),
        ("localhost:8080", "127.0.0.1", True),
        ("LOCALHOST:8080", "127.0.0.1", True),
        ("[::1]:8080", "::1", True),
        ("10.0.0.5:8080", "10.0.0.5", True),  # any IP literal: no name to rebind
        ("evil.example:8080", "127.0.0.1", False),
        ("evil.example", "127.0.0.1", False),
        ("localhost.evil.example", "127.0.0.1", False),
        ("crawler.internal:8080", "crawler.internal", True),
        ("other.internal:8080", "crawler.internal", False),
        ("evil.example:8080", "0.0.0.0", True),  # noqa: S104 (every address: any name)
        ("evil.example:8080", "::", True),
        ("", "127.0.0.1", False),
        (None, "127.0.0.1", False),
        ("[::1", "127.0.0.1", False),
        (":8080", "127.0.0.1", False),
    ],
)
def test_host_allowed(host, bound, allowed):
    assert host_allowed(host, bound) is allowed


@given(st.text(max_size=60))
def test_any_header_is_answered_without_raising(host):
    assert host_allowed(host, "127.0.0.1") in {True, False}
