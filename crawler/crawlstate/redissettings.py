"""Which Redis server a crawl uses, from its settings, read as scrapy-redis reads them.

``REDIS_URL`` names the server; ``REDIS_HOST`` and ``REDIS_PORT`` (what scrapy-redis
users set) name it too, as ``redis://HOST:PORT``: a host alone means port 6379, a
port alone host ``localhost``. Both ways at once is fine when they name the same
server, and refused when they do not (scrapy-redis silently lets the URL win: here
that would leave a node crawling alone). With none of them, the crawl starts its
private server (``crawler.crawlstate.embedded``).

``REDIS_PARAMS`` is a dict of redis-py client keyword arguments (``-s`` may give it
as JSON), applied to every client of the crawl, the private server's too. Only
plain values of ``SUPPORTED_PARAMS`` are taken; ``host``, ``port`` and ``url`` in it
count as the settings of those names (a setting wins, as in scrapy-redis); a class
to import (scrapy-redis' ``redis_cls``) or any other key stops start-up with one line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from crawler.policy.redisurl import check_redis_url
from crawler.policy.typedsettings import as_int, get_bool

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

DEFAULT_HOST = "localhost"
DEFAULT_PORT = 6379
# redis-py client keyword arguments REDIS_PARAMS may give: plain values that mean
# the same to the blocking, asyncio and Cluster clients.
SUPPORTED_PARAMS = frozenset(
    {
        "username",
        "password",
        "db",
        "socket_timeout",
        "socket_connect_timeout",
        "socket_keepalive",
        "retry_on_timeout",
        "health_check_interval",
        "client_name",
        "max_connections",
        "encoding",
        "protocol",
        "ssl",
        "ssl_keyfile",
        "ssl_certfile",
        "ssl_cert_reqs",
        "ssl_ca_certs",
        "ssl_ca_path",
        "ssl_check_hostname",
        "ssl_password",
    }
)
# Keys refused with the reason why.
_REFUSED = {
    "redis_cls": "the crawler makes its own clients (REDIS_CLUSTER=True for a "
    "Redis Cluster); a class to import is not taken",
    "decode_responses": "the crawler reads replies as bytes",
    "connection_pool": "the crawler makes its own pools",
}
# REDIS_PARAMS keys that stand for a setting.
_SERVER_PARAMS = {"url": "REDIS_URL", "host": "REDIS_HOST", "port": "REDIS_PORT"}


@dataclass(frozen=True, slots=True)
class RedisSettings:
    """The crawl's server: *url* (empty: the private server), whether it is a
    Cluster (None: ask it), and the client keyword arguments *params*."""

    url: str = ""
    cluster: bool | None = False
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def private(self) -> bool:
        """True when no server is named: the crawl starts its own."""
        return not self.url

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> RedisSettings:
        """Raises ``ValueError`` with one line that names the setting to fix."""
        params = _params(settings)
        named = {
            "REDIS_URL": settings.get("REDIS_URL"),
            "REDIS_HOST": settings.get("REDIS_HOST"),
            "REDIS_PORT": settings.get("REDIS_PORT"),
        }
        server = {name: params.pop(key, None) for key, name in _SERVER_PARAMS.items()}
        server.update({name: value for name, value in named.items() if value})
        url = _url(
            str(server["REDIS_URL"] or ""),
            str(server["REDIS_HOST"] or ""),
            _port(server["REDIS_PORT"]),
        )
        check_redis_url(url, "REDIS_URL" if server["REDIS_URL"] else "REDIS_HOST")
        if get_bool(settings, "REDIS_CLUSTER"):
            cluster: bool | None = True
        else:
            cluster = None if url else False
        return cls(url, cluster, params)


def _params(settings: BaseSettings) -> dict[str, Any]:
    """REDIS_PARAMS as a dict of supported keys (server keys kept for the caller)."""
    try:
        params = dict(settings.getdict("REDIS_PARAMS"))
    except (ValueError, TypeError):
        raise ValueError(
            f"REDIS_PARAMS must be a dict (JSON with -s), got "
            f"{settings.get('REDIS_PARAMS')!r}"
        ) from None
    for key, value in params.items():
        if key in _REFUSED:
            raise ValueError(f"REDIS_PARAMS[{key!r}] is not supported: {_REFUSED[key]}")
        if key not in SUPPORTED_PARAMS and key not in _SERVER_PARAMS:
            raise ValueError(
                f"REDIS_PARAMS[{key!r}] is not supported; supported keys: "
                f"{', '.join(sorted(SUPPORTED_PARAMS | set(_SERVER_PARAMS)))}"
            )
        if not isinstance(value, str | int | float | bool | type(None)):
            kind = type(value).__name__
            raise ValueError(  # noqa: TRY004 (a bad setting: one line at start-up)
                f"REDIS_PARAMS[{key!r}] must be a plain value, got a {kind}"
            )
    return params


def _port(value: object) -> int | None:
    """REDIS_PORT as a port number; None when not set."""
    if value is None or value == "":
        return None
    return as_int(value, "REDIS_PORT", at_least=1, at_most=65535)


def _url(url: str, host: str, port: int | None) -> str:
    """The server's URL; raises ``ValueError`` if REDIS_URL and REDIS_HOST/PORT name
    two servers."""
    if not host and port is None:
        return url
    named = f"redis://{_bracketed(host or DEFAULT_HOST)}:{port or DEFAULT_PORT}"
    if not url:
        return named
    parts = urlsplit(url)
    try:
        same = (
            parts.scheme in {"redis", "rediss"}
            and (not host or (parts.hostname or "").lower() == host.lower())
            and (port is None or (parts.port or DEFAULT_PORT) == port)
        )
    except ValueError:  # a bad port in the URL
        same = False
    if not same:
        raise ValueError(
            f"REDIS_URL and REDIS_HOST/REDIS_PORT ({named}) name different servers: "
            "set only one of them"
        )
    return url


def _bracketed(host: str) -> str:
    """*host* fit for a URL: an IPv6 address in brackets."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host
