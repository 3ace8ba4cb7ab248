"""Run-time controls of a crawl: pausing it, and settings that change while it runs.

The crawl's control hash (``CrawlKeys.control``) holds ``paused`` (``"1"`` pauses
every node) and ``set:<SETTING>`` fields whose values are the text a ``-s`` option
would give. ``scrapy frontier pause|resume|set`` write it; each node reads it at every
heartbeat, parses it with ``read_control`` and applies the settings with
``with_runtime_settings``, which checks them as start-up would.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from scrapy.settings import BaseSettings

from crawler.frontier.runsettings import RunSettings

if TYPE_CHECKING:
    from collections.abc import Mapping

logger = logging.getLogger(__name__)

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
# Priority of run-time values: they replace what -s gave the node at start.
RUNTIME_PRIORITY = "cmdline"


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
    named in ``ignored``. Values are not checked here: see ``with_runtime_settings``.
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
            (setting := _canonical(name.removeprefix(SETTING_PREFIX)))
            in RUNTIME_SETTINGS
        ):
            settings[setting] = value
        else:
            ignored.append(name)
    return Control(paused, dict(sorted(settings.items())), tuple(sorted(ignored)))


def with_runtime_settings(
    settings: BaseSettings, overrides: Mapping[str, str]
) -> BaseSettings:
    """A copy of *settings* with *overrides* (name -> text) applied, as ``-s`` would.

    Raises a one-line ``ValueError`` naming the setting when a name is not in
    RUNTIME_SETTINGS or when the result would stop a crawl at start-up: the
    politeness policy must build (``PolitenessConfig.from_settings``), and
    ``DEPTH_LIMIT`` must be an integer >= 0. *settings* is not changed.
    """
    for name in overrides:
        check_runtime_name(name)
    result = BaseSettings()
    result.update(settings)
    for name, value in overrides.items():
        result.set(_canonical(name), value, priority=RUNTIME_PRIORITY)
    RunSettings.from_settings(result, machine_zone="UTC")
    return result


def check_runtime_name(name: str) -> None:
    """Raise a one-line ``ValueError`` unless *name* may change at run time."""
    if _canonical(name) not in RUNTIME_SETTINGS:
        raise ValueError(
            f"{name} cannot change while a crawl runs; these can: "
            + ", ".join(RUNTIME_SETTINGS)
        )


def _canonical(name: str) -> str:
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


class ControlFollower:
    """A node's side of the control hash: the state it follows, read every heartbeat.

    Run-time settings always apply over the settings the node started with, so
    ``set KEY --unset`` takes a value back. A value written by hand that would not
    pass start-up checks is logged and the settings in force are kept.
    """

    def __init__(self, settings: BaseSettings, machine_zone: str) -> None:
        self._settings = settings
        self._machine_zone = machine_zone
        self.state = Control()

    @property
    def paused(self) -> bool:
        return self.state.paused

    def follow(
        self, fields: Mapping[bytes, bytes] | Mapping[str, str]
    ) -> tuple[bool, RunSettings | None]:
        """Take the control hash's *fields*: whether the crawl was just resumed, and
        the new run-time settings if they changed (and are good)."""
        previous, self.state = self.state, read_control(fields)
        if self.state.paused != previous.paused:
            logger.info(
                "Crawl %(what)s by `scrapy frontier %(command)s`",
                {
                    "what": "paused" if self.state.paused else "resumed",
                    "command": "pause" if self.state.paused else "resume",
                },
            )
        resumed = previous.paused and not self.state.paused
        if self.state.settings == previous.settings:
            return resumed, None
        return resumed, self._configs(self.state.settings)

    def _configs(self, overrides: dict[str, str]) -> RunSettings | None:
        try:
            settings = with_runtime_settings(self._settings, overrides)
            configs = RunSettings.from_settings(settings, self._machine_zone)
        except ValueError as exc:
            logger.error(
                "Ignored run-time settings %(overrides)r: %(error)s",
                {"overrides": overrides, "error": exc},
            )
            return None
        logger.info(
            "Run-time settings in force: %(overrides)r", {"overrides": overrides}
        )
        return configs
