"""What a robots.txt fetch means under RFC 9309, and the record every node shares.

Pure: no I/O, no clock (times are arguments). The middleware fetches; this decides:

- 2xx: the file is parsed, its first 500 KiB (RFC 9309 2.5) at least and at most.
- 3xx: followed, five hops at most (2.3.1.2); more, or no usable Location, is
  "unavailable".
- 4xx: unavailable (2.3.1.3): no restrictions.
- 5xx, 429, timeouts, network errors: unreachable (2.3.1.4): everything is disallowed
  until ``ROBOTS_ERROR_RETRY_DELAY`` has passed and the file is tried again. Once the
  host has stayed unreachable for ``ROBOTS_ERROR_GIVE_UP_DAYS``, its last good copy
  applies if one is kept, else no restrictions (the RFC's "reasonably long period").
- Anything else is cached for ``ROBOTS_CACHE_TTL`` (2.4).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Literal, get_args
from urllib.parse import urljoin, urlsplit

from crawler.policy.botname import contact_of, token_of
from crawler.policy.typedsettings import get_float

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

    from crawler.policy.typedsettings import Range

# RFC 9309 2.5: crawlers must parse at least 500 KiB; the rest is ignored.
MAX_BYTES = 500 * 1024
# RFC 9309 2.3.1.2: at least five consecutive redirects are followed.
MAX_REDIRECTS = 5
RECORD_VERSION = 1
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
TOO_MANY_REQUESTS = 429
DEFAULT_PORTS = {"http": 80, "https": 443}
DAY = 86400.0
# The cache's lifetime, the retry delay and the fetch timeout.
_SECONDS: Range = {"above": 0, "note": "seconds"}

# What one HTTP answer means: parse it, follow it, or one of the RFC's two failures.
Outcome = Literal["parse", "redirect", "unavailable", "unreachable"]
# What applies to an origin until its record expires.
State = Literal["rules", "allow", "deny"]


class BadRecordError(ValueError):
    """A cached record that this code did not write: never trusted."""


@dataclass(frozen=True, slots=True)
class RobotsConfig:
    """The ``ROBOTS_*`` settings, checked once at start-up.

    *user_agent* is the product token rules are matched against; *contact* the
    ``USERAGENT_CONTACT`` URL robots.txt fetches name.
    """

    user_agent: str
    cache_ttl: float
    error_retry_delay: float
    give_up_after: float
    fetch_timeout: float
    contact: str

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> RobotsConfig:
        """The config; raises ``ValueError`` naming the first bad setting."""
        token = token_of(settings)
        days = get_float(settings, "ROBOTS_ERROR_GIVE_UP_DAYS", at_least=0, note="days")
        return cls(
            user_agent=token,
            cache_ttl=get_float(settings, "ROBOTS_CACHE_TTL", **_SECONDS),
            error_retry_delay=get_float(
                settings, "ROBOTS_ERROR_RETRY_DELAY", **_SECONDS
            ),
            give_up_after=days * DAY,
            fetch_timeout=get_float(settings, "ROBOTS_FETCH_TIMEOUT", **_SECONDS),
            contact=contact_of(settings),
        )

    @property
    def fetch_budget(self) -> float:
        """Longest one fetch can take, redirects included (a lock must outlive it)."""
        return self.fetch_timeout * (MAX_REDIRECTS + 1)


# --- origins and fetches --------------------------------------------------------------


def origin_of(url: str) -> str:
    """``scheme://host:port`` of an http(s) *url*, port always given.

    Raises ``ValueError`` for other schemes and URLs without a host.
    """
    try:
        parts = urlsplit(url)
        scheme, host, port = parts.scheme.lower(), parts.hostname, parts.port
    except ValueError as exc:  # a bad port, an unbalanced "["
        raise ValueError(f"no http(s) origin in {url!r}: {exc}") from None
    if scheme not in DEFAULT_PORTS or not host:
        raise ValueError(f"no http(s) origin in {url!r}")
    return f"{scheme}://{_bracketed(host)}:{port or DEFAULT_PORTS[scheme]}"


def robots_url(origin: str) -> str:
    """Where *origin*'s robots.txt is fetched (a default port is left out)."""
    parts = urlsplit(origin)
    netloc = _bracketed(parts.hostname or "")
    if parts.port != DEFAULT_PORTS.get(parts.scheme):
        netloc += f":{parts.port}"
    return f"{parts.scheme}://{netloc}/robots.txt"


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def outcome_of_status(status: int) -> Outcome:
    """What an HTTP status of robots.txt means (RFC 9309 2.3.1).

    429 is the one 4xx taken as unreachable: a server that asks us to slow down has
    not said its robots.txt is gone (Google reads it the same way).
    """
    if 200 <= status < 300:
        return "parse"
    if status in REDIRECT_STATUSES:
        return "redirect"
    if 300 <= status < 500 and status != TOO_MANY_REQUESTS:
        return "unavailable"
    return "unreachable"


def redirect_target(url: str, location: str | None) -> str | None:
    """The absolute http(s) URL a redirect from *url* leads to; None if unusable."""
    if not location or not location.strip():
        return None
    try:
        target = urljoin(url, location.strip())
        origin_of(target)
    except ValueError:
        return None
    return target


# --- the record shared through Redis --------------------------------------------------


@dataclass(frozen=True, slots=True)
class RobotsRecord:
    """What applies to an origin until *expires_at*, and what a failure falls back on.

    *body* is the robots.txt in force (state ``rules``), or, while the file is
    unreachable, its last good copy. *failing_since* is when the current run of
    failed fetches began.
    """

    state: State
    fetched_at: float
    expires_at: float
    status: int | None = None
    body: str | None = None
    failing_since: float | None = None

    def fresh(self, now: float) -> bool:
        return now < self.expires_at

    @property
    def gave_up(self) -> bool:
        """Whether the file is unreachable but no longer blocks its host."""
        return self.failing_since is not None and self.state != "deny"

    def to_json(self) -> str:
        return json.dumps({"v": RECORD_VERSION, **asdict(self)}, separators=(",", ":"))

    @classmethod
    def from_json(cls, data: str | bytes) -> RobotsRecord:
        """The record *data* holds; raises ``BadRecordError`` for anything else."""
        try:
            value = json.loads(data)
        except (ValueError, RecursionError) as exc:
            raise BadRecordError(f"not JSON ({exc})") from None
        if not isinstance(value, dict) or value.keys() != _FIELDS:
            raise BadRecordError("not a robots record (fields differ)")
        if type(value["v"]) is not int or value["v"] != RECORD_VERSION:
            raise BadRecordError(f"unknown record version {value['v']!r}")
        if value["state"] not in get_args(State):
            raise BadRecordError(f"unknown state {value['state']!r}")
        record = cls(
            state=value["state"],
            fetched_at=_time(value["fetched_at"], "fetched_at"),
            expires_at=_time(value["expires_at"], "expires_at"),
            status=_status(value["status"]),
            body=_body(value["body"]),
            failing_since=(
                None
                if value["failing_since"] is None
                else _time(value["failing_since"], "failing_since")
            ),
        )
        if record.state == "rules" and record.body is None:
            raise BadRecordError("rules without a body")
        if record.expires_at < record.fetched_at:
            raise BadRecordError("expires before it was fetched")
        return record


_FIELDS = frozenset({"v", *RobotsRecord.__dataclass_fields__})


def _time(number: object, name: str) -> float:
    if (
        isinstance(number, bool)
        or not isinstance(number, int | float)
        or not math.isfinite(number)
    ):
        raise BadRecordError(f"{name} is not a finite number: {number!r}")
    return float(number)


def _status(status: object) -> int | None:
    if status is None or (type(status) is int and 100 <= status <= 999):
        return status
    raise BadRecordError(f"status is not an HTTP status: {status!r}")


def _body(body: object) -> str | None:
    if body is None or (isinstance(body, str) and len(body) <= MAX_BYTES):
        return body
    raise BadRecordError("body is not text of at most MAX_BYTES characters")


@dataclass(frozen=True, slots=True)
class Fetch:
    """How one fetch of robots.txt ended, redirects followed: *text* if parsed."""

    outcome: Outcome
    status: int | None = None
    text: str = ""


def record_after(
    config: RobotsConfig,
    fetch: Fetch,
    *,
    now: float,
    previous: RobotsRecord | None = None,
) -> RobotsRecord:
    """The record *fetch* leaves; *previous* is the one it replaces (expired, or
    None), which an unreachable file falls back on."""
    if fetch.outcome == "parse":
        return RobotsRecord(
            "rules", now, now + config.cache_ttl, fetch.status, fetch.text
        )
    if fetch.outcome != "unreachable":  # unavailable, or a redirect that led nowhere
        return RobotsRecord("allow", now, now + config.cache_ttl, fetch.status)
    since = now
    if previous is not None and previous.failing_since is not None:
        since = min(previous.failing_since, now)
    last_good = previous.body if previous is not None else None
    state: State = "deny"
    if now - since >= config.give_up_after:
        state = "allow" if last_good is None else "rules"
    expires = now + config.error_retry_delay
    return RobotsRecord(state, now, expires, fetch.status, last_good, since)


def retention(config: RobotsConfig, record: RobotsRecord, *, now: float) -> int:
    """Seconds Redis keeps *record*: past its expiry for the give-up period, so a
    failing refetch still finds the last good copy and when the failures began."""
    return max(1, math.ceil(record.expires_at - now + config.give_up_after))
