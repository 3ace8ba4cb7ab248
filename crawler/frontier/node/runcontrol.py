"""A node's side of the crawl's run-time controls (``crawler.crawlstate.controls``):
pausing, and settings that change while the crawl runs, read at every heartbeat.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from crawler.context.runsettings import RunSettings, with_runtime_settings
from crawler.crawlstate.controls import Control, read_control

if TYPE_CHECKING:
    from collections.abc import Mapping

    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)


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
