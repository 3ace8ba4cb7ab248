"""The only place Redis clients are made, and the private server started for a crawl.

``REDIS_URL`` names the server (``redis://``, ``rediss://``, with a password); empty, a
private server is started for the crawl (see ``crawler.crawlstate.embedded``) and
stopped when the engine stops. Every component of one crawl shares it.

A Redis Cluster gets redis-py's cluster clients: with ``REDIS_CLUSTER=True``, or when
the server ``REDIS_URL`` names says it is a Cluster node (``INFO cluster``; asked once
per crawl). They are typed as the single-server clients: the crawler sends only what
both answer alike (single-key commands, scripts on the keys of one slot,
non-transactional pipelines), except for scripts in pipelines, which
``crawler.frontier.scripts`` sends each its own way.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit, urlunsplit
from weakref import WeakKeyDictionary

import redis
import redis.asyncio
from redis.exceptions import RedisClusterException
from scrapy import signals

from crawler.crawlstate.embedded import EmbeddedRedis

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

# Options of every client: a server that does not answer fails fast, at start-up.
CLIENT_OPTIONS: dict[str, Any] = {"socket_connect_timeout": 5}

# The private server of each running crawl; an entry goes when its crawl does.
_embedded: WeakKeyDictionary[Crawler, EmbeddedRedis] = WeakKeyDictionary()
# Whether each running crawl's Redis is a Cluster, found out on its first client.
_clustered: WeakKeyDictionary[Crawler, bool] = WeakKeyDictionary()


class RedisUnreachableError(ConnectionError):
    """The configured Redis server does not answer."""


def redis_url(crawler: Crawler) -> str:
    """``REDIS_URL``, or the URL of the crawl's private server (started on first use)."""
    url: str = crawler.settings.get("REDIS_URL") or ""
    if url:
        return url
    if crawler not in _embedded:
        directory = Path(crawler.settings.get("FRONTIER_EMBEDDED_REDIS_DIR"))
        _embedded[crawler] = EmbeddedRedis(directory).start()
        crawler.signals.connect(_stop_embedded, signal=signals.engine_stopped)
    return _embedded[crawler].url


def sync_client(crawler: Crawler) -> redis.Redis:
    """A blocking client, for the scheduler's bounded one-round-trip calls."""
    url = redis_url(crawler)
    return connect(url, cluster=_is_cluster(crawler, url))


def async_client(crawler: Crawler) -> redis.asyncio.Redis:
    """An asyncio client, for middlewares, pipelines and signal handlers."""
    url = redis_url(crawler)
    if _is_cluster(crawler, url):
        client = redis.asyncio.RedisCluster.from_url(url, **CLIENT_OPTIONS)
        return cast("redis.asyncio.Redis", client)  # see the module's docstring
    return redis.asyncio.Redis.from_url(url, **CLIENT_OPTIONS)


def cluster_mode(settings: BaseSettings) -> bool | None:
    """Whether the crawl's Redis is a Cluster: True with ``REDIS_CLUSTER``, False for
    the private server (``REDIS_URL`` empty), None when the server must be asked."""
    if settings.getbool("REDIS_CLUSTER"):
        return True
    return None if settings.get("REDIS_URL") else False


def connect(url: str, *, cluster: bool | None, **options: Any) -> redis.Redis:
    """A blocking client of *url*: redis-py's Cluster client if *cluster*, or if it
    is None and the server says it is a Cluster node (see ``is_cluster_node``).

    A Cluster client reaches the cluster as it is made: raises
    ``RedisUnreachableError`` with one line if it cannot. A single-server client
    connects on its first command (``check_reachable``).
    """
    options = {**CLIENT_OPTIONS, **options}
    if cluster is None:
        cluster = is_cluster_node(url, **options)
    if not cluster:
        return redis.Redis.from_url(url, **options)
    try:
        client = redis.RedisCluster.from_url(url, **options)
    except (RedisClusterException, redis.RedisError, OSError) as exc:
        raise RedisUnreachableError(
            f"Redis Cluster at {masked(url)} cannot be used ({exc}): check REDIS_URL "
            "(a node of the cluster) and REDIS_CLUSTER"
        ) from None
    return cast("redis.Redis", client)  # see the module's docstring


def is_cluster_node(url: str, **options: Any) -> bool:
    """Whether the server at *url* runs in Cluster mode (``INFO cluster``). A server
    that refuses INFO (an ACL) counts as a single server: set ``REDIS_CLUSTER``.

    Raises ``RedisUnreachableError`` as ``check_reachable`` does.
    """
    probe = redis.Redis.from_url(url, **{**CLIENT_OPTIONS, **options})
    try:
        check_reachable(probe, url)
        info = probe.info("cluster")
    except redis.ResponseError as exc:
        # A Cluster node refuses the SELECT of a database other than 0: the Cluster
        # client then says that in one line.
        return "cluster mode" in str(exc)
    finally:
        probe.close()
    return bool(info.get("cluster_enabled"))


def check_reachable(client: redis.Redis, url: str) -> None:
    """Raise ``RedisUnreachableError`` with one line that says what to fix."""
    try:
        client.ping()
    except redis.AuthenticationError as exc:
        raise RedisUnreachableError(
            f"Redis at {masked(url)} refused the password ({exc}): check REDIS_URL"
        ) from None
    except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
        raise RedisUnreachableError(
            f"Redis at {masked(url)} is unreachable ({exc}): check REDIS_URL and that "
            "the server runs and accepts connections from this machine"
        ) from None


def masked(url: str) -> str:
    """*url* with its password replaced by ``***``, fit for a log line."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    netloc = f"{user}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def _is_cluster(crawler: Crawler, url: str) -> bool:
    """Whether the crawl's Redis at *url* is a Cluster, asked once per crawl."""
    known = _clustered.get(crawler)
    if known is None:
        mode = cluster_mode(crawler.settings)
        known = _clustered[crawler] = is_cluster_node(url) if mode is None else mode
    return known


def _stop_embedded(sender: Crawler) -> None:
    server = _embedded.pop(sender, None)
    if server is not None:
        server.stop()
