"""The frontier's settings, read once and checked, so a bad value stops start-up.

Settings that may change while the crawl runs (``DEPTH_LIMIT``, the politeness
policy) are not here: they are read from ``crawler.context.runsettings`` each time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from crawler.context.components import page_store_on
from crawler.context.database import DatabaseURL, RecordsDatabaseError
from crawler.crawlstate.keys import CrawlKeys
from crawler.frontier.dedup import DedupConfig
from crawler.frontier.importance import Importance
from crawler.policy.dispatch import POLICIES
from crawler.policy.hosts import SHARD_BY_CHOICES, ShardBy
from crawler.policy.order import check_order
from crawler.policy.servers import PolitenessKey, politeness_key
from crawler.policy.sharding import check_shards
from crawler.policy.sitestrategy import SiteStrategyConfig
from crawler.policy.typedsettings import (
    get_bool,
    get_choice,
    get_float,
    get_int,
    get_optional_int,
)

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

# What a node name may hold: it is part of Redis keys and of log lines.
NAME_PATTERN = re.compile(r"[A-Za-z0-9._-]{1,100}")


@dataclass(frozen=True, slots=True)
class FrontierConfig:
    prefix: str
    shards: int
    shard_by: ShardBy
    host_concurrency: int
    lease_timeout: float
    maintenance_interval: float
    node_ttl: float
    log_interval: float
    bfs_lookahead: int
    push_batch: int
    persist: bool
    reset: bool
    close_when_drained: bool
    dedup: DedupConfig
    depth_repair: bool
    reparse_from_store: bool
    node_name: str = ""
    order: str = "bfs"
    # FRONTIER_ORDER = importance: its formula and URL scorer (None otherwise).
    importance: Importance | None = None
    # Some sites have depth limits of their own (FRONTIER_SITE_STRATEGY).
    site_depth_limits: bool = False
    # Which node owns which shard (crawler.policy.dispatch), how long a moved shard
    # stays, and this node's weight at start (0: measured).
    dispatch: str = "rendezvous"
    dispatch_hold: float = 30.0
    node_weight: float = 0.0
    # What one politeness delay is counted against (crawler.policy.servers): beyond
    # "host", leases hand back their server's gate (crawler.frontier.servergates).
    politeness_key: PolitenessKey = "host"
    # Most new links queued a host (FRONTIER_HOST_MAX_PAGES); None: no limit.
    host_max_pages: int | None = None
    # FRONTIER_SPILL: the most entries a host's queue keeps in Redis
    # (FRONTIER_SPILL_HEAD; 0: spill off) and the database the rest goes to.
    spill_head: int = 0
    spill_database_url: str = ""
    spill_interval: float = 1.0  # seconds between the spill worker's rounds

    @classmethod
    def from_settings(cls, settings: BaseSettings, spider_name: str) -> FrontierConfig:
        """The config; raises ``ValueError`` with one line naming the bad setting."""
        shard_by = get_choice(settings, "FRONTIER_SHARD_BY", SHARD_BY_CHOICES)
        order = check_order(
            settings.get("FRONTIER_ORDER", "bfs"),
            get_int(settings, "FRONTIER_BFS_LOOKAHEAD"),
        )
        config = cls(
            prefix=CrawlKeys.of(settings, spider_name).prefix,
            shards=check_shards(get_int(settings, "FRONTIER_SHARDS")),
            shard_by=shard_by,
            host_concurrency=get_int(settings, "FRONTIER_HOST_CONCURRENCY", above=0),
            lease_timeout=get_float(settings, "FRONTIER_LEASE_TIMEOUT", above=0),
            maintenance_interval=get_float(
                settings, "FRONTIER_MAINTENANCE_INTERVAL", above=0
            ),
            node_ttl=get_float(settings, "FRONTIER_NODE_TTL"),
            log_interval=get_float(settings, "FRONTIER_LOG_INTERVAL", above=0),
            bfs_lookahead=get_int(settings, "FRONTIER_BFS_LOOKAHEAD"),
            push_batch=get_int(settings, "FRONTIER_PUSH_BATCH", above=0),
            persist=get_bool(settings, "FRONTIER_PERSIST"),
            reset=get_bool(settings, "FRONTIER_RESET"),
            close_when_drained=get_bool(settings, "FRONTIER_CLOSE_WHEN_DRAINED"),
            dedup=DedupConfig.from_settings(settings),
            depth_repair=(
                get_bool(settings, "FRONTIER_DEPTH_REPAIR")
                and get_int(settings, "FRONTIER_BFS_LOOKAHEAD") != 0
            ),
            reparse_from_store=page_store_on(settings),
            node_name=check_node_name(settings.get("FRONTIER_NODE_NAME") or ""),
            dispatch=get_choice(settings, "FRONTIER_DISPATCH", POLICIES),
            dispatch_hold=get_float(settings, "FRONTIER_DISPATCH_HOLD", at_least=0),
            node_weight=get_float(settings, "FRONTIER_NODE_WEIGHT", at_least=0),
            politeness_key=politeness_key(settings),
            host_max_pages=get_optional_int(
                settings, "FRONTIER_HOST_MAX_PAGES", at_least=1
            ),
            order=order,
            importance=(
                Importance.from_settings(settings) if order == "importance" else None
            ),
            site_depth_limits=SiteStrategyConfig.from_settings(
                settings
            ).sets_depth_limits,
            **spill_settings(settings),
        )
        config._check(settings)
        return config

    def _check(self, settings: BaseSettings) -> None:
        """What no one setting says alone: how settings must relate."""
        if self.lease_timeout <= 2 * self.maintenance_interval:
            raise ValueError(
                "FRONTIER_LEASE_TIMEOUT must be more than twice "
                "FRONTIER_MAINTENANCE_INTERVAL, which renews the leases of this node"
            )
        if self.node_ttl <= 2 * self.maintenance_interval:
            raise ValueError(
                "FRONTIER_NODE_TTL must be more than twice "
                "FRONTIER_MAINTENANCE_INTERVAL, which is this node's heartbeat"
            )
        per_domain = get_int(settings, "CONCURRENT_REQUESTS_PER_DOMAIN")
        if 0 < per_domain < self.host_concurrency:
            raise ValueError(
                "CONCURRENT_REQUESTS_PER_DOMAIN must be >= FRONTIER_HOST_CONCURRENCY "
                f"({per_domain} < {self.host_concurrency})"
            )
        if any(c in self.prefix for c in "{}*?[] "):
            raise ValueError(
                f"FRONTIER_KEY_PREFIX must not contain braces, spaces or glob "
                f"characters, got {self.prefix!r}"
            )


def spill_settings(settings: BaseSettings) -> dict[str, Any]:
    """FRONTIER_SPILL's fields: its head and database (the page records' unless
    FRONTIER_SPILL_DATABASE_URL names another), checked; none when it is off."""
    if not get_bool(settings, "FRONTIER_SPILL"):
        return {}
    url = settings.get("FRONTIER_SPILL_DATABASE_URL") or settings.get(
        "RECORDS_DATABASE_URL"
    )
    if not url:
        raise ValueError(
            "FRONTIER_SPILL needs a database: set FRONTIER_SPILL_DATABASE_URL "
            "(or RECORDS_DATABASE_URL)"
        )
    setting = "FRONTIER_SPILL_DATABASE_URL"
    try:
        DatabaseURL.parse(url, setting)
    except RecordsDatabaseError as exc:
        raise ValueError(str(exc)) from None
    return {
        "spill_head": get_int(settings, "FRONTIER_SPILL_HEAD", above=0),
        "spill_database_url": url,
        "spill_interval": get_float(settings, "FRONTIER_SPILL_INTERVAL", above=0),
    }


def check_node_name(name: str) -> str:
    """*name*, if empty or a valid node name; ``ValueError`` names the setting."""
    if name and not NAME_PATTERN.fullmatch(name):
        raise ValueError(
            "FRONTIER_NODE_NAME must be 1 to 100 letters, digits, '.', '_' or '-', "
            f"got {name!r}"
        )
    return name
