"""Redis clients of a URL: blocking or asyncio, single server or Cluster, checked.

A Redis Cluster gets redis-py's cluster clients. They are typed as the single-server
clients: the crawler sends only what both answer alike (single-key commands, scripts
on the keys of one slot, non-transactional pipelines), except for scripts in
pipelines, which ``crawler.frontier.store.scripts`` sends each its own way.
"""

from __future__ import annotations

from typing import Any, cast
from urllib.parse import urlsplit, urlunsplit

import redis
import redis.asyncio
from redis.exceptions import RedisClusterException

# Options of every client: a server that does not answer fails fast, at start-up.
CLIENT_OPTIONS: dict[str, Any] = {"socket_connect_timeout": 5}
# The settings that name the server, for the line that says what to fix.
SERVER_SETTINGS = "REDIS_URL (or REDIS_HOST, REDIS_PORT, REDIS_PARAMS)"


class RedisUnreachableError(ConnectionError):
    """The crawl's Redis cannot be used: it does not answer, or is badly named."""


class ReadyCluster(redis.asyncio.RedisCluster):
    """redis-py's asyncio Cluster client, which learns the cluster's layout before it
    runs a command.

    With redis-py's own client (8.1), commands sent at once by a client that has not
    learnt the layout yet fail now and then with an ``AttributeError`` (a
    connection torn down under them): a node that joins a crawl leases several
    requests at once, the robots.txt lookup of each went to Redis, and a page whose
    lookup failed was recorded unparseable, never fetched. Here every command waits
    for the layout first (``initialize`` returns at once once it is known); after
    that, commands sent at once succeed
    (``test_commands_sent_at_once_by_a_new_asyncio_client_all_succeed``)."""

    async def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        await self.initialize()
        return await super().execute_command(*args, **kwargs)


def async_connect(url: str, *, cluster: bool, **options: Any) -> redis.asyncio.Redis:
    """An asyncio client of *url* (a Cluster's if *cluster*); connects on first use."""
    options = {**CLIENT_OPTIONS, **options}
    if cluster:
        client = ReadyCluster.from_url(url, **options)
        return cast("redis.asyncio.Redis", client)  # see the module's docstring
    return redis.asyncio.Redis.from_url(url, **options)


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
            f"Redis Cluster at {masked(url)} cannot be used ({exc}): check "
            f"{SERVER_SETTINGS} (a node of the cluster) and REDIS_CLUSTER"
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
            f"Redis at {masked(url)} refused the password ({exc}): check "
            f"{SERVER_SETTINGS}"
        ) from None
    except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
        raise RedisUnreachableError(
            f"Redis at {masked(url)} is unreachable ({exc}): check "
            f"{SERVER_SETTINGS} and that the server runs and accepts connections "
            "from this machine"
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
