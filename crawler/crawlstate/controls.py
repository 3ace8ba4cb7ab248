"""A crawl's run-time controls in Redis: pausing it, and settings that change while
it runs.

The crawl's control hash (``CrawlKeys.control``) holds ``paused`` (``"1"`` pauses
every node) and ``set:<SETTING>`` fields whose values are the text a ``-s`` option
would give. ``scrapy frontier pause|resume|set`` and the dashboard write it; each
node reads it at every heartbeat (``crawler.frontier.node.runcontrol``), parses it
with ``read_control`` and applies the settings with
``crawler.context.runsettings.with_runtime_settings``, which checks them as
start-up would.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

    import redis

    from crawler.crawlstate.keys import CrawlKeys

# The settings that may change while a crawl runs; any other is refused.
RUNTIME_SETTINGS = (
    "POLITENESS_DAY_DELAY",
    "POLITENESS_NIGHT_DELAY",
    "POLITENESS_DAY_HOURS",
    "POLITENESS_JITTER",
    "POLITENESS_OVERRIDES",
    "POLITENESS_TIMEZONES",
    "POLITENESS_MAX_PAGES_PER_HOST_PER_HOUR",
    "POLITENESS_MIN_DELAY",
    "DEPTH_LIMIT",
)
# Scrapy's names for run-time settings of ours: the add-on moves DOWNLOAD_DELAY to
# POLITENESS_MIN_DELAY at start, so a run-time DOWNLOAD_DELAY means it too.
ALIASES = {"DOWNLOAD_DELAY": "POLITENESS_MIN_DELAY"}
# The control hash field that pauses every node while it holds PAUSED_VALUE.
PAUSED_FIELD = "paused"
PAUSED_VALUE = "1"
# Prefix of the control hash fields that hold a run-time setting.
SETTING_PREFIX = "set:"


@dataclass(frozen=True, slots=True)
class Control:
    """What the control hash says: paused or not, run-time settings (name -> text),
    and the fields it holds that mean nothing to this crawler (to log once)."""

    paused: bool = False
    settings: dict[str, str] = field(default_factory=dict)
    ignored: tuple[str, ...] = ()


def setting_field(name: str) -> str:
    """The control hash field of run-time setting *name* (or its Scrapy alias)."""
    return SETTING_PREFIX + ALIASES.get(name, name)


def read_control(fields: Mapping[bytes, bytes] | Mapping[str, str]) -> Control:
    """Parse the control hash (``HGETALL``'s reply, bytes or text); never raises.

    Only ``paused`` = ``"1"`` pauses. A ``set:`` field of a setting outside
    RUNTIME_SETTINGS, a field that is not UTF-8, or anything else is ignored and
    named in ``ignored``. Values are not checked here: see
    ``crawler.context.runsettings.with_runtime_settings``.
    """
    paused = False
    settings: dict[str, str] = {}
    ignored: list[str] = []
    for raw_name, raw_value in fields.items():
        name, value = _text(raw_name), _text(raw_value)
        if name is None or value is None:
            ignored.append(_shown(raw_name))
        elif name == PAUSED_FIELD and value == PAUSED_VALUE:
            paused = True
        elif name.startswith(SETTING_PREFIX) and (
            (setting := canonical_name(name.removeprefix(SETTING_PREFIX)))
            in RUNTIME_SETTINGS
        ):
            settings[setting] = value
        else:
            ignored.append(name)
    return Control(paused, dict(sorted(settings.items())), tuple(sorted(ignored)))


def check_runtime_name(name: str) -> None:
    """Raise a one-line ``ValueError`` unless *name* may change at run time."""
    if canonical_name(name) not in RUNTIME_SETTINGS:
        raise ValueError(
            f"{name} cannot change while a crawl runs; these can: "
            + ", ".join(RUNTIME_SETTINGS)
        )


def canonical_name(name: str) -> str:
    """*name*, or the setting of ours its Scrapy alias stands for."""
    return ALIASES.get(name, name)


def _text(raw: bytes | str) -> str | None:
    if isinstance(raw, str):
        return raw
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _shown(raw: bytes | str) -> str:
    return raw if isinstance(raw, str) else raw.decode("utf-8", "backslashreplace")


def pause(client: redis.Redis, keys: CrawlKeys) -> None:
    """Stop every node handing out requests (in-flight ones finish)."""
    client.hset(keys.control, PAUSED_FIELD, PAUSED_VALUE)


def resume(client: redis.Redis, keys: CrawlKeys) -> bool:
    """Let the nodes of a paused crawl fetch again; False if it was not paused."""
    return bool(client.hdel(keys.control, PAUSED_FIELD))
