"""MetricsExporter: this node's Prometheus endpoint, METRICS_HOST:METRICS_PORT/metrics.

prometheus-client's own WSGI server, in its own daemon threads: a scrape never runs
on the reactor, and a slow scraper never slows the crawl. The port is bound as the
extension is built, so a port in use stops start-up with one line (exit status 1)
before anything is crawled. The server stops, and its port is freed, when the engine
stops: after the spider closed, so a last scrape sees the final stats (the shutdown
waits for the server's loop in a thread, not on the reactor). Families are made at
scrape time (``crawler.metrics.collector``); the cluster-wide ones are read from
Redis once the frontier is open.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.process_collector import ProcessCollector
from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet import threads

from crawler.context.crawl import CrawlContext
from crawler.context.startup import StartupFailure, failed_at_startup
from crawler.crawlstate.keys import CrawlKeys
from crawler.crawlstate.status import read_status
from crawler.metrics.cluster import ClusterGauges
from crawler.metrics.collector import NodeCollector
from crawler.policy.typedsettings import (
    get_float,
    get_int,
    get_optional_int,
    seconds_list,
)

if TYPE_CHECKING:
    from threading import Thread
    from typing import Self
    from wsgiref.simple_server import WSGIServer

    import redis
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

# Seconds a cluster-wide read may wait on a Redis that does not answer.
READ_TIMEOUT = 2.0
MAX_PORT = 65535


@dataclass(frozen=True, slots=True)
class MetricsConfig:
    """The METRICS_* settings, checked once."""

    port: int | None  # None: no endpoint
    host: str
    refresh: float

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> MetricsConfig:
        """Raises ``ValueError`` (one line, naming the setting) on a bad value."""
        port = get_optional_int(
            settings,
            "METRICS_PORT",
            at_least=0,
            at_most=MAX_PORT,
            note="(0 or empty: no metrics endpoint)",
        )
        host = settings.get("METRICS_HOST")
        if not isinstance(host, str) or not host.strip():
            raise ValueError(f"METRICS_HOST must be an address, got {host!r}")
        refresh = get_float(settings, "METRICS_REFRESH", above=0, note="seconds")
        return cls(port or None, host.strip(), refresh)


def metrics_registry(collector: NodeCollector) -> CollectorRegistry:
    """A registry of its own (several crawlers may share a process): the node's
    families, and the process' CPU, memory and open files."""
    registry = CollectorRegistry()
    registry.register(collector)
    ProcessCollector(registry=registry)
    return registry


class MetricsExporter:
    """Serves this node's metrics while the spider runs."""

    def __init__(
        self,
        crawler: Crawler,
        server: WSGIServer,
        thread: Thread,
        cluster: ClusterGauges,
    ) -> None:
        self._crawler = crawler
        self._server = server
        self._thread = thread
        self._cluster = cluster
        self._client: redis.Redis | None = None
        self._stopped = False
        crawler.signals.connect(self._spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self._engine_stopped, signal=signals.engine_stopped)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        try:
            config = MetricsConfig.from_settings(crawler.settings)
        except ValueError as exc:
            StartupFailure(crawler, f"Bad setting: {exc}")
            raise NotConfigured from None  # said once, by StartupFailure
        if config.port is None:
            raise NotConfigured  # off by default: no log line (a reason would warn)
        assert crawler.stats is not None
        cluster = ClusterGauges(config.refresh)
        tiers = seconds_list(crawler.settings.get("TIMEOUTS_TIERS")) or ()
        registry = metrics_registry(
            NodeCollector(
                crawler.stats.get_stats,
                CrawlContext.of(crawler).round_trip_times,
                cluster,
                tiers=len(tiers),
            )
        )
        try:
            server, thread = start_http_server(config.port, config.host, registry)
        except OSError as exc:
            message = (
                f"Bad setting: METRICS_PORT={config.port}: cannot serve metrics on "
                f"{config.host}:{config.port} ({exc.strerror or exc}): choose a free "
                "port and METRICS_HOST an address of this machine, or METRICS_PORT=0 "
                "for no endpoint"
            )
            StartupFailure(crawler, message)
            raise NotConfigured from None
        logger.info(
            "Metrics served on http://%(host)s:%(port)d/metrics",
            {"host": config.host, "port": server.server_port},
        )
        return cls(crawler, server, thread, cluster)

    def _spider_opened(self) -> None:
        """Read the cluster-wide gauges from now on: the frontier has opened (and
        started the private Redis server, if it runs one), unless start-up failed."""
        if failed_at_startup(self._crawler):
            return  # the crawl stops; no private Redis server is started for us
        settings = self._crawler.settings
        spider = self._crawler.spider
        try:
            keys = CrawlKeys.of(settings, spider.name if spider else "")
            shards = get_int(settings, "FRONTIER_SHARDS")
            client = CrawlContext.of(self._crawler).redis.sync_client(
                socket_timeout=READ_TIMEOUT, socket_connect_timeout=READ_TIMEOUT
            )
        except (ValueError, ConnectionError) as exc:  # the scheduler says why
            logger.debug("Metrics: no cluster-wide gauges (%(error)s)", {"error": exc})
            return
        self._client = client
        self._cluster.attach(lambda: read_status(client, keys, shards))

    async def _engine_stopped(self) -> None:
        """Stop serving and free the port, once the spider has closed (its
        ``spider_closed`` handlers done, the stats final); the server's loop is
        waited for in a thread (up to its half-second poll), not on the reactor."""
        await maybe_deferred_to_future(threads.deferToThread(self._stop))

    def _stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
        if self._client is not None:
            self._client.close()
