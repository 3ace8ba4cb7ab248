"""`scrapy frontier web`'s options and settings, checked before anything is served:
each mistake is one ControlError line that says what to fix."""

from __future__ import annotations

import argparse
from typing import Any

import pytest
from scrapy.settings import Settings

from crawler.commands.steering import ControlError
from crawler.commands.web import address, dashboard
from crawler.defaults import install_defaults

# No Redis client nor keys: nothing is read before the options are checked.
NOBODY: Any = None
TOKEN = "0123456789ab"  # noqa: S105 (a test's token)


def opts(**values: Any) -> argparse.Namespace:
    settings = Settings(values.pop("settings", {}))
    install_defaults(settings)
    given = {"host": None, "port": None, "control": False, "token": None, "top": 20}
    # What `scrapy frontier` sets before any subcommand: the Redis it reads, shown.
    given["redis_shown"] = "redis://127.0.0.1:6379/0 (named by the settings)"
    return argparse.Namespace(settings=settings, **{**given, **values})


@pytest.mark.parametrize(
    ("given", "words"),
    [
        ({"token": "0123456789ab"}, "--token goes with --control"),
        ({"control": True, "token": "short"}, "at least 8 characters"),
        ({"settings": {"DASHBOARD_REFRESH": "never"}}, "DASHBOARD_REFRESH must be"),
        ({"settings": {"DASHBOARD_REFRESH": 0}}, "DASHBOARD_REFRESH must be"),
        ({"settings": {"DASHBOARD_REFRESH": "inf"}}, "DASHBOARD_REFRESH must be"),
        ({"settings": {"FRONTIER_SHARDS": 3}}, "FRONTIER_SHARDS"),
    ],
)
def test_bad_options_and_settings(given, words):
    with pytest.raises(ControlError, match=words):
        dashboard(NOBODY, NOBODY, opts(**given))


@pytest.mark.parametrize(
    ("given", "words"),
    [
        ({"port": 70000}, "the port must be in 0..65535"),
        ({"port": -1}, "the port must be in 0..65535"),
        ({"settings": {"DASHBOARD_PORT": "http"}}, "DASHBOARD_PORT must be an integer"),
    ],
)
def test_bad_ports(given, words):
    with pytest.raises(ControlError, match=words):
        address(opts(**given))


def test_options_win_over_settings():
    assert address(opts()) == ("127.0.0.1", 8080)
    given = opts(host="127.0.0.30", port=0, settings={"DASHBOARD_PORT": 9000})
    assert address(given) == ("127.0.0.30", 0)
    assert address(opts(settings={"DASHBOARD_HOST": "::1"})) == ("::1", 8080)


def test_control_gets_a_token_and_read_only_none():
    assert dashboard(NOBODY, NOBODY, opts()).config.token is None
    made = dashboard(NOBODY, NOBODY, opts(control=True)).config.token
    assert made is not None
    assert len(made) >= 16
    other = dashboard(NOBODY, NOBODY, opts(control=True)).config.token
    assert other != made
    given = opts(control=True, token=TOKEN)
    assert dashboard(NOBODY, NOBODY, given).config.token == TOKEN
