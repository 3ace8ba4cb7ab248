"""The settings that may change while a crawl runs, as one read-only object.

Components that obey them (``HostDelays`` for the politeness policy, ``Admission``
and ``FrontierStore``'s depth repair for ``DEPTH_LIMIT``, read nowhere else) hold
the crawl's ``RunSettingsHolder`` and read ``current`` each time they decide. Only the node's runtime replaces it, whole, when
``scrapy frontier set`` changes a value (``crawler.frontier.node.runcontrol``): no
component's attribute is ever assigned from outside, and a reader never sees half
of a change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from scrapy.settings import BaseSettings

from crawler.crawlstate.controls import canonical_name, check_runtime_name
from crawler.policy.politeness import PolitenessConfig
from crawler.policy.typedsettings import as_float, as_int, get_int

if TYPE_CHECKING:
    from collections.abc import Mapping


@dataclass(frozen=True, slots=True)
class RunSettings:
    """The run-time settings in force: the politeness policy and the depth limit."""

    politeness: PolitenessConfig
    depth_limit: int

    @classmethod
    def from_settings(cls, settings: BaseSettings, machine_zone: str) -> RunSettings:
        """Read from *settings*; raises a one-line ``ValueError`` on a bad value."""
        depth_limit = get_int(settings, "DEPTH_LIMIT", at_least=0, note="(0: no limit)")
        politeness = PolitenessConfig.from_settings(settings, machine_zone=machine_zone)
        return cls(politeness, depth_limit)


class RunSettingsHolder:
    """The crawl's run-time settings: read ``current``; the runtime ``replace``s it."""

    def __init__(self, current: RunSettings) -> None:
        self._current = current

    @property
    def current(self) -> RunSettings:
        return self._current

    def replace(self, settings: RunSettings) -> None:
        """Put *settings* in force (the node's runtime only)."""
        self._current = settings


# Priority of run-time values: they replace what -s gave the node at start.
RUNTIME_PRIORITY = "cmdline"


def with_runtime_settings(
    settings: BaseSettings, overrides: Mapping[str, str]
) -> BaseSettings:
    """A copy of *settings* with *overrides* (name -> text) applied, as ``-s`` would.

    Raises a one-line ``ValueError`` naming the setting when a name is not in
    RUNTIME_SETTINGS or when the result would stop a crawl at start-up: the
    politeness policy must build (``PolitenessConfig.from_settings``), and
    ``DEPTH_LIMIT`` must be an integer >= 0, and the node's own settings must
    pass ``check_node_value``. *settings* is not changed.
    """
    for name in overrides:
        check_runtime_name(name)
    result = BaseSettings()
    result.update(settings)
    for name, value in overrides.items():
        result.set(canonical_name(name), value, priority=RUNTIME_PRIORITY)
    RunSettings.from_settings(result, machine_zone="UTC")
    for name, value in overrides.items():
        check_node_value(canonical_name(name), value)
    return result


def check_node_value(name: str, value: object) -> None:
    """Raise a one-line ``ValueError`` naming *name* unless *value* would do at
    start-up for one of the node's own settings: ``CONCURRENT_REQUESTS`` a positive
    integer, ``FRONTIER_NODE_WEIGHT`` a number >= 0 (0: measured). The node's
    runtime applies them (its downloader's concurrency, its dispatch weight);
    other names pass."""
    if name == "CONCURRENT_REQUESTS":
        as_int(value, name, at_least=1)
    elif name == "FRONTIER_NODE_WEIGHT":
        as_float(value, name, at_least=0, note="(0: measured)")
