"""Whether a Redis URL names a server redis-py can reach, said in one line.

redis-py takes ``redis://``, ``rediss://`` (TLS) and ``unix://`` URLs, but accepts
``redis://`` with no host (it then means localhost) or a database that is not a
number (ignored), and refuses the others with a traceback that does not name the
setting. This checks the URL first, so a typo stops start-up with what to write.

Pure: no I/O.
"""

from __future__ import annotations

from urllib.parse import urlsplit

SCHEMES = ("redis", "rediss", "unix")
# What a URL that names a Redis server looks like, for the messages.
EXAMPLE = "redis://HOST:6379/0"


def check_redis_url(url: str, setting: str = "REDIS_URL") -> None:
    """Raises ``ValueError`` with one line naming *setting*, *url* and the fix when
    *url* is not a Redis URL; an empty *url* (no server named) is fine."""
    if not url:
        return
    if "://" not in url:
        raise ValueError(f"{setting} {url!r} has no scheme: use {_with_scheme(url)}")
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise ValueError(
            f"{setting} {url!r} has the scheme {parts.scheme!r}: use redis://, "
            f"rediss:// (TLS) or unix:// (a socket), e.g. {EXAMPLE}"
        )
    problem = _socket_problem(parts.path) if scheme == "unix" else _server_problem(url)
    if problem:
        raise ValueError(f"{setting} {url!r} {problem}")


def _with_scheme(url: str) -> str:
    """*url* (``host:port``, ``host``, a socket path) with the scheme it lacks."""
    if url.startswith("/"):
        return f"unix://{url}"
    return f"redis://{url}" if "/" in url else f"redis://{url}/0"


def _server_problem(url: str) -> str:
    """What is wrong with a ``redis://`` or ``rediss://`` URL; empty if nothing."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:  # not a number, or above 65535
        port = 0
    if port == 0:
        return f"has a bad port: use a number from 1 to 65535, e.g. {EXAMPLE}"
    host = parts.hostname or ""
    if not host:
        return f"names no host: use {EXAMPLE}"
    if any(character.isspace() for character in host):
        return f"has a space in its host {host!r}"
    database = parts.path.strip("/")
    if database and not database.isdigit():
        return f"has the database {database!r}: it must be a number, e.g. {EXAMPLE}"
    return ""


def _socket_problem(path: str) -> str:
    """What is wrong with a ``unix://`` URL's socket path; empty if nothing."""
    if not path or path == "/":
        return "names no socket: use unix:///path/to/redis.sock"
    return ""
