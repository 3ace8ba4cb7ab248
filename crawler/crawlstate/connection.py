"""The crawl's Redis server: one ``CrawlRedis`` per crawl, the maker of its clients.

``REDIS_URL``, or ``REDIS_HOST``/``REDIS_PORT``, name the server, and ``REDIS_PARAMS``
gives client options (``crawler.crawlstate.redissettings``); with none of them a
private server is started for the crawl on first use (``crawler.crawlstate.embedded``)
and stopped when the engine stops. Every component of one crawl shares it.

A Redis Cluster gets redis-py's cluster clients (``crawler.crawlstate.clients``): with
``REDIS_CLUSTER=True``, or when the named server says it is a Cluster node
(``INFO cluster``; asked once per crawl).

Components reach the crawl's instance through the add-on
(``CrawlContext.of(crawler).redis``); commands, which have no crawler, make one with
``CrawlRedis.from_settings(settings, join=True, prefix=...)``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crawler.crawlstate.clients import (
    CLIENT_OPTIONS,
    RedisUnreachableError,
    async_connect,
    check_reachable,
    connect,
    is_cluster_node,
    masked,
)
from crawler.crawlstate.embedded import EmbeddedRedis, running_url
from crawler.crawlstate.redissettings import RedisSettings
from crawler.crawlstate.running import password_withheld, running_crawl

if TYPE_CHECKING:
    import redis
    import redis.asyncio
    from scrapy.settings import BaseSettings

__all__ = [
    "CLIENT_OPTIONS",
    "CrawlRedis",
    "RedisSettingsError",
    "RedisUnreachableError",
    "check_reachable",
    "connect",
    "is_cluster_node",
    "masked",
]

logger = logging.getLogger(__name__)


class RedisSettingsError(RedisUnreachableError):
    """The settings name no usable Redis server (the message says which to fix)."""


class CrawlRedis:
    """The Redis server of one crawl, or of one command run.

    Made from the settings (no I/O); the private server starts on the first use of
    ``url`` and stops on ``close()``. With *join* (commands), when the settings
    name no server: the Redis of the crawl of *prefix* running in this
    directory (``crawler.crawlstate.running``), else a private server a running
    crawl holds, used as it is, else one started on its data. ``source`` says which.
    """

    def __init__(
        self,
        server: RedisSettings,
        directory: Path | None,
        *,
        join: bool = False,
        prefix: str = "",
        running: Path | None = None,
    ) -> None:
        self.server = server
        self._directory = directory
        self._join = join
        self._prefix = prefix
        self._running = running
        self._url = server.url
        self.source = "named by the settings" if server.url else ""
        self._cluster = server.cluster
        self._embedded: EmbeddedRedis | None = None

    @classmethod
    def from_settings(
        cls, settings: BaseSettings, *, join: bool = False, prefix: str = ""
    ) -> CrawlRedis:
        """Raises ``RedisSettingsError`` with one line for settings that name no
        usable server."""
        try:
            server = RedisSettings.from_settings(settings)
        except ValueError as exc:
            raise RedisSettingsError(f"Bad setting: {exc}") from None
        name: str = settings.get("FRONTIER_EMBEDDED_REDIS_DIR") or ""
        running: str = settings.get("FRONTIER_RUNNING_DIR") or ""
        return cls(
            server,
            Path(name) if name else None,
            join=join,
            prefix=prefix,
            running=Path(running) if running else None,
        )

    @property
    def url(self) -> str:
        """The server's URL; the private server is started on first use."""
        if not self._url:
            self._url = self._private_url()
        return self._url

    @property
    def cluster(self) -> bool:
        """Whether the server is a Redis Cluster (asked once if the settings do not
        say); raises ``RedisUnreachableError`` if it does not answer."""
        if self._cluster is None:
            self._cluster = is_cluster_node(self.url, **self.server.params)
        return self._cluster

    def sync_client(self, **options: Any) -> redis.Redis:
        """A blocking client, for the scheduler's bounded one-round-trip calls."""
        options = {**self.server.params, **options}
        return connect(self.url, cluster=self.cluster, **options)

    def async_client(self, **options: Any) -> redis.asyncio.Redis:
        """An asyncio client, for middlewares, pipelines and signal handlers."""
        options = {**self.server.params, **options}
        return async_connect(self.url, cluster=self.cluster, **options)

    def close(self) -> None:
        """Stop the private server this instance started, if any."""
        if self._embedded is not None:
            self._embedded.stop()
            self._embedded = None

    def _private_url(self) -> str:
        directory = self._directory
        if directory is None:
            raise RedisSettingsError(
                "Bad setting: no Redis named (REDIS_URL, REDIS_HOST, REDIS_PORT) and "
                "FRONTIER_EMBEDDED_REDIS_DIR is empty: set one of them"
            )
        if not self._join:
            self._embedded = EmbeddedRedis(directory).start()
            self.source = f"private, data in {directory}"
            return self._embedded.url
        if self._running is not None and (
            found := running_crawl(self._running, self._prefix)
        ):
            if password_withheld(found.redis_url):
                raise RedisSettingsError(
                    f"the crawl {self._prefix!r} running as pid {found.pid} uses "
                    f"{found.redis_url}, whose password is not kept on disk: pass "
                    "-s REDIS_URL=redis://:PASSWORD@... (or set REDIS_URL)"
                )
            self.source = f"of the crawl running as pid {found.pid}"
            return found.redis_url
        self.source = f"private, data in {directory}"
        if url := running_url(directory):
            return url
        if not directory.is_dir():
            raise RedisSettingsError(
                "REDIS_URL is empty and no crawl has kept its data in "
                f"FRONTIER_EMBEDDED_REDIS_DIR={str(directory)!r}: pass "
                "-s REDIS_URL=redis://... (or REDIS_HOST and REDIS_PORT)"
            )
        self._embedded = EmbeddedRedis(directory).start()
        return self._embedded.url
