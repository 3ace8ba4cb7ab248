"""Each host's crawl strategy and depth limit in this crawl (``FRONTIER_SITE_STRATEGY``).

One ``SiteStrategies`` a crawl (``CrawlContext.sites``): the frontier asks it, per
request, whether a host is crawled ``bfs`` or ``dfs`` and to which depth; the site
history middleware (``crawler.spiders.sitehistory``) tells it what earlier crawls
and this one have seen of each host, for the hosts ``auto`` classifies. Answers are
cached per host: a request costs a dict lookup, and a crawl whose rules set no depth
limit of their own never even parses a URL for it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from crawler.context.logonce import OnceLogger
from crawler.policy.hosts import BadURLError, host_of
from crawler.policy.siteclass import SiteHistory, classify

if TYPE_CHECKING:
    from collections.abc import Mapping

    from scrapy.crawler import Crawler

    from crawler.policy.siteclass import Observation, SiteEvidence
    from crawler.policy.sitestrategy import SiteRule, SiteStrategyConfig, Strategy

logger = logging.getLogger(__name__)

# Hosts whose answer is kept; past it the cache starts again (answers are cheap to
# make again, and a crawl of millions of hosts must not grow without bound).
CACHE_SIZE = 100_000


@dataclass(frozen=True, slots=True)
class SiteDecision:
    """A host's strategy, depth limit (None: ``DEPTH_LIMIT``) and why, as
    ``scrapy frontier hosts`` shows it: ``dfs (auto: 3% links leave, depth 9)``."""

    strategy: Strategy
    depth_limit: int | None
    why: str

    def text(self) -> str:
        limit = "" if self.depth_limit is None else f", depth limit {self.depth_limit}"
        return f"{self.strategy} ({self.why}{limit})"


class SiteStrategies:
    """The crawl's answer to "bfs or dfs, and how deep" for each host."""

    def __init__(self, config: SiteStrategyConfig, crawler: Crawler) -> None:
        assert crawler.stats is not None
        self._config = config
        self._stats = crawler.stats
        self._once = OnceLogger(logger, crawler)
        self._decisions: dict[str, SiteDecision] = {}
        # Of the hosts auto classifies: earlier crawls, and this crawl so far.
        self._history: dict[str, SiteHistory] = {}
        self._current: dict[str, Observation] = {}
        self._classified: dict[str, str] = {}  # host -> strategy counted in stats

    @property
    def config(self) -> SiteStrategyConfig:
        return self._config

    # --- what the frontier asks -------------------------------------------------------

    def strategy_of(self, host: str) -> Strategy:
        """``bfs`` or ``dfs`` for *host* (as ``crawler.policy.hosts.host_of`` gives it)."""
        return self.decision_of(host).strategy

    def depth_limit_of(self, host: str, default: int) -> int:
        """*host*'s depth limit: its suffix's own, else *default* (``DEPTH_LIMIT``)."""
        if not self._config.sets_depth_limits:
            return default
        limit = self.decision_of(host).depth_limit
        return default if limit is None else limit

    def depth_limit_of_url(self, url: str, default: int) -> int:
        """``depth_limit_of`` the host of *url*; *default* for a URL without one
        (the frontier refuses it anyway) and, at no cost, when no suffix sets one."""
        if not self._config.sets_depth_limits:
            return default
        try:
            return self.depth_limit_of(host_of(url), default)
        except BadURLError:
            return default

    def decision_of(self, host: str) -> SiteDecision:
        """*host*'s strategy, depth limit and why (cached)."""
        found = self._decisions.get(host)
        if found is None:
            if len(self._decisions) >= CACHE_SIZE:
                self._decisions.clear()
            found = self._decisions[host] = self._decide(host)
        return found

    def _decide(self, host: str) -> SiteDecision:
        rule = self._config.rule_of(host)
        if rule.kind != "auto":
            return SiteDecision(rule.kind, rule.depth_limit, rule.source())
        return self._auto(host, rule)

    def _auto(self, host: str, rule: SiteRule) -> SiteDecision:
        history = self._history.get(host, SiteHistory())
        found = classify(history, self._current.get(host))
        if found.known and self._classified.get(host) != found.strategy:
            self._classified[host] = found.strategy
            self._counted(host, found.strategy, found.why)
        return SiteDecision(found.strategy, rule.depth_limit, f"auto: {found.why}")

    def _counted(self, host: str, strategy: Strategy, why: str) -> None:
        """Count a host auto classified (again, if it changed); log the first."""
        stat = "sites/classified_bfs"
        if strategy == "dfs":
            stat = "sites/classified_dfs"
        self._once.event(
            stat,
            "FRONTIER_SITE_STRATEGY auto: %(host)s is crawled %(strategy)s from now "
            "on (%(why)s); further classifications are only counted in "
            "sites/classified_bfs and sites/classified_dfs",
            {"host": host, "strategy": strategy, "why": why},
            level=logging.INFO,
            key="classified",
        )

    # --- what the site history tells it -----------------------------------------------

    def needs_history(self, host: str) -> bool:
        """Whether *host* is classified by ``auto`` (its history matters here)."""
        return self._config.rule_of(host).kind == "auto"

    def remember(self, histories: Mapping[str, SiteHistory]) -> None:
        """Earlier crawls' history of hosts (read at start); only auto hosts' kept."""
        for host, history in histories.items():
            if self.needs_history(host):
                self._history[host] = history
                self._decisions.pop(host, None)

    def learn(self, host: str, evidence: SiteEvidence) -> None:
        """What this crawl (all its nodes) has seen of *host* so far."""
        if self.needs_history(host):
            self._current[host] = evidence.observation()
            self._decisions.pop(host, None)
