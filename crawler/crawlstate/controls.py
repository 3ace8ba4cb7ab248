"""A crawl's run-time controls in Redis: pausing it, settings that change while it
runs (crawl-wide or for one node), and nodes told to leave.

The crawl's control hash (``CrawlKeys.control``) holds ``paused`` (``"1"`` pauses
every node), ``set:<SETTING>`` fields whose values are the text a ``-s`` option
would give (every node), ``node:<id>:set:<SETTING>`` fields (that node only: they
win over the crawl-wide value) and ``drain:<id>`` = ``"1"`` (that node hands its
shards to the others and exits once its in-flight requests are done).
``scrapy frontier pause|resume|set|drain`` and the dashboard write it with the
writers below; each node reads it at every heartbeat
(``crawler.frontier.node.runcontrol``), parses it with ``read_control``, takes its
own settings with ``Control.settings_for`` and applies them with
``crawler.context.runsettings.with_runtime_settings``, which checks them as
start-up would.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from crawler.crawlstate.readers import encoded

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
    "CONCURRENT_REQUESTS",
    "FRONTIER_NODE_WEIGHT",
)
# Scrapy's names for run-time settings of ours: the add-on moves DOWNLOAD_DELAY to
# POLITENESS_MIN_DELAY at start, so a run-time DOWNLOAD_DELAY means it too.
ALIASES = {"DOWNLOAD_DELAY": "POLITENESS_MIN_DELAY"}
# The control hash field that pauses every node while it holds PAUSED_VALUE.
PAUSED_FIELD = "paused"
PAUSED_VALUE = "1"
# Prefix of the control hash fields that hold a run-time setting.
SETTING_PREFIX = "set:"
# Prefix of the fields of one node's own run-time settings: node:<id>:set:<SETTING>.
NODE_PREFIX = "node:"
# Prefix of the field that tells a node to drain while it holds DRAIN_VALUE.
DRAIN_PREFIX = "drain:"
DRAIN_VALUE = "1"


@dataclass(frozen=True, slots=True)
class Control:
    """What the control hash says: paused or not, crawl-wide run-time settings
    (name -> text), the nodes told to drain, each node's own run-time settings
    (node id -> name -> text), and the fields it holds that mean nothing to this
    crawler (to log once)."""

    paused: bool = False
    settings: dict[str, str] = field(default_factory=dict)
    ignored: tuple[str, ...] = ()
    draining: frozenset[str] = frozenset()
    node_settings: dict[str, dict[str, str]] = field(default_factory=dict)

    def settings_for(self, node_id: str) -> dict[str, str]:
        """The run-time settings in force on node *node_id*: the crawl-wide ones,
        its own winning, sorted by name."""
        merged = {**self.settings, **self.node_settings.get(node_id, {})}
        return dict(sorted(merged.items()))


def setting_field(name: str, node_id: str | None = None) -> str:
    """The control hash field of run-time setting *name* (or its Scrapy alias):
    crawl-wide, or node *node_id*'s own."""
    own = f"{NODE_PREFIX}{node_id}:" if node_id is not None else ""
    return own + SETTING_PREFIX + canonical_name(name)


def drain_field(node_id: str) -> str:
    """The control hash field that tells node *node_id* to drain."""
    return DRAIN_PREFIX + node_id


def read_control(fields: Mapping[bytes, bytes] | Mapping[str, str]) -> Control:
    """Parse the control hash (``HGETALL``'s reply, bytes or text); never raises.

    Only ``paused`` = ``"1"`` pauses and ``drain:<id>`` = ``"1"`` drains. A
    ``set:`` or ``node:<id>:set:`` field of a setting outside RUNTIME_SETTINGS, an
    empty node id, a field that is not UTF-8, or anything else is ignored and named
    in ``ignored``. Values are not checked here: see
    ``crawler.context.runsettings.with_runtime_settings``.
    """
    paused = False
    settings: dict[str, str] = {}
    nodes: dict[str, dict[str, str]] = {}
    draining: set[str] = set()
    ignored: list[str] = []
    for raw_name, raw_value in fields.items():
        name, value = _text(raw_name), _text(raw_value)
        if name is None or value is None:
            ignored.append(_shown(raw_name))
        elif name == PAUSED_FIELD and value == PAUSED_VALUE:
            paused = True
        elif (node := _drained(name, value)) is not None:
            draining.add(node)
        elif (setting := _setting(name)) is not None:
            settings[setting] = value
        elif (own := _node_setting(name)) is not None:
            nodes.setdefault(own[0], {})[own[1]] = value
        else:
            ignored.append(name)
    return Control(
        paused,
        dict(sorted(settings.items())),
        tuple(sorted(ignored)),
        frozenset(draining),
        {node: dict(sorted(own.items())) for node, own in sorted(nodes.items())},
    )


def _setting(name: str) -> str | None:
    """The run-time setting a crawl-wide ``set:<SETTING>`` field names, else None."""
    if not name.startswith(SETTING_PREFIX):
        return None
    setting = canonical_name(name.removeprefix(SETTING_PREFIX))
    return setting if setting in RUNTIME_SETTINGS else None


def _node_setting(name: str) -> tuple[str, str] | None:
    """(node id, setting) of a ``node:<id>:set:<SETTING>`` field, else None. The id
    may hold colons: the setting is what follows the last ``:set:``."""
    if not name.startswith(NODE_PREFIX):
        return None
    node, found, setting = name.removeprefix(NODE_PREFIX).rpartition(
        ":" + SETTING_PREFIX
    )
    setting = canonical_name(setting)
    return (node, setting) if found and node and setting in RUNTIME_SETTINGS else None


def _drained(name: str, value: str) -> str | None:
    """The node a ``drain:<id>`` = ``"1"`` field tells to drain, else None."""
    node = name.removeprefix(DRAIN_PREFIX)
    if name.startswith(DRAIN_PREFIX) and node and value == DRAIN_VALUE:
        return node
    return None


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


def set_setting(
    client: redis.Redis,
    keys: CrawlKeys,
    name: str,
    value: str,
    node_id: str | None = None,
) -> None:
    """Give run-time setting *name* the text *value*: crawl-wide, or for node
    *node_id* only. The value is the caller's to check (``with_runtime_settings``)."""
    client.hset(keys.control, encoded(setting_field(name, node_id)), value)


def unset_setting(
    client: redis.Redis, keys: CrawlKeys, name: str, node_id: str | None = None
) -> bool:
    """Drop the run-time value of *name* (crawl-wide, or node *node_id*'s own);
    False if it had none."""
    return bool(client.hdel(keys.control, encoded(setting_field(name, node_id))))


def drain(client: redis.Redis, keys: CrawlKeys, node_id: str) -> None:
    """Tell node *node_id* to hand its shards to the others and exit once its
    in-flight requests are done."""
    client.hset(keys.control, encoded(drain_field(node_id)), DRAIN_VALUE)


def clear_drain(client: redis.Redis, keys: CrawlKeys, node_id: str) -> bool:
    """Forget that node *node_id* was told to drain (a node started again under
    that id runs); False if it was not."""
    return bool(client.hdel(keys.control, encoded(drain_field(node_id))))
