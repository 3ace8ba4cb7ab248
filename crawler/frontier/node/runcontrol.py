"""A node's side of the crawl's run-time controls (``crawler.crawlstate.controls``):
pausing, settings that change while the crawl runs (crawl-wide, and this node's
own, which win), and being told to drain; read at every heartbeat.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from crawler.context.runsettings import RunSettings, with_runtime_settings
from crawler.crawlstate.controls import Control, read_control
from crawler.policy.typedsettings import as_float, as_int

if TYPE_CHECKING:
    from collections.abc import Mapping

    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)


class ControlFollower:
    """A node's side of the control hash: the state it follows, read every heartbeat.

    Run-time settings always apply over the settings the node started with, so
    ``set KEY --unset`` takes a value back. A value written by hand that would not
    pass start-up checks is logged and the settings in force are kept. With no
    *node_id*, only the crawl-wide settings are followed and no drain is seen.
    """

    def __init__(
        self,
        settings: BaseSettings,
        machine_zone: str,
        node_id: str | None = None,
    ) -> None:
        self._settings = settings
        self._machine_zone = machine_zone
        self._node_id = node_id
        self.state = Control()
        # This node's run-time settings in force: the last good ones followed.
        self._in_force: dict[str, str] = {}

    @property
    def paused(self) -> bool:
        return self.state.paused

    @property
    def draining(self) -> bool:
        """Whether this node was told to drain (``scrapy frontier drain NODE``)."""
        return self._node_id is not None and self._node_id in self.state.draining

    @property
    def settings(self) -> dict[str, str]:
        """This node's run-time settings in force (name -> text), its own merged
        over the crawl-wide ones."""
        return dict(self._in_force)

    @property
    def concurrency(self) -> int | None:
        """``CONCURRENT_REQUESTS`` set at run time for this node (its own value, else
        the crawl-wide one); None when none is: the value it started with stands."""
        value = self._in_force.get("CONCURRENT_REQUESTS")
        return None if value is None else as_int(value, "CONCURRENT_REQUESTS")

    @property
    def weight(self) -> float | None:
        """``FRONTIER_NODE_WEIGHT`` set at run time for this node; None when none
        is: the value it started with stands (0: measured)."""
        value = self._in_force.get("FRONTIER_NODE_WEIGHT")
        return None if value is None else as_float(value, "FRONTIER_NODE_WEIGHT")

    def follow(
        self, fields: Mapping[bytes, bytes] | Mapping[str, str]
    ) -> tuple[bool, RunSettings | None]:
        """Take the control hash's *fields*: whether the crawl was just resumed, and
        the new run-time settings if this node's changed (and are good).
        ``draining``, ``concurrency`` and ``weight`` say the rest afterwards."""
        previous, self.state = self.state, read_control(fields)
        if self.state.paused != previous.paused:
            logger.info(
                "Crawl %(what)s by `scrapy frontier %(command)s`",
                {
                    "what": "paused" if self.state.paused else "resumed",
                    "command": "pause" if self.state.paused else "resume",
                },
            )
        if self.draining and self._node_id not in previous.draining:
            logger.info(
                "Node %(node)s told to drain by `scrapy frontier drain`: its shards "
                "go to the other nodes, it exits once its requests in flight are done",
                {"node": self._node_id},
            )
        resumed = previous.paused and not self.state.paused
        mine, before = self._own(self.state), self._own(previous)
        if mine == before:
            return resumed, None
        return resumed, self._configs(mine)

    def _own(self, control: Control) -> dict[str, str]:
        """The run-time settings *control* puts in force on this node."""
        if self._node_id is None:
            return control.settings
        return control.settings_for(self._node_id)

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
        self._in_force = overrides
        logger.info(
            "Run-time settings in force: %(overrides)r", {"overrides": overrides}
        )
        return configs
