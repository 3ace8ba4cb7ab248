"""The only place Redis clients are made, and the private server started for a crawl.

``REDIS_URL`` names the server (``redis://``, ``rediss://``, with a password); empty, a
private server is started for the crawl (see ``crawler.frontier.embedded``) and
stopped when the engine stops. Every component of one crawl shares it.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit
from weakref import WeakKeyDictionary

import redis
import redis.asyncio
from scrapy import signals

from crawler.frontier.embedded import EmbeddedRedis

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

# The private server of each running crawl; an entry goes when its crawl does.
_embedded: WeakKeyDictionary[Crawler, EmbeddedRedis] = WeakKeyDictionary()


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
    return redis.Redis.from_url(redis_url(crawler), socket_connect_timeout=5)


def async_client(crawler: Crawler) -> redis.asyncio.Redis:
    """An asyncio client, for middlewares, pipelines and signal handlers."""
    return redis.asyncio.Redis.from_url(redis_url(crawler), socket_connect_timeout=5)


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


def _stop_embedded(sender: Crawler) -> None:
    server = _embedded.pop(sender, None)
    if server is not None:
        server.stop()
