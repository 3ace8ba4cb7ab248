"""``scrapy frontier hosts``: the busiest hosts of a crawl, as a table.

The per-host traffic counters the traffic middleware keeps, ranked by one of them,
with each host's timeout record (slow, paused) from the timeouts middleware and its
crawl strategy with why (``FRONTIER_SITE_STRATEGY``: ``dfs (auto: 3% links leave,
depth 9)``) from the site history middleware. Nothing
Redis holds makes it raise: values that are not what this crawler writes show as
they are, or as ``?``.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import IO, TYPE_CHECKING, cast

import redis

from crawler.crawlstate.readers import encoded
from crawler.crawlstate.sitecounters import read_strategies
from crawler.middlewares.traffic import RANK_METRICS
from crawler.policy.tiers import BadHealthRecordError, HostHealth

if TYPE_CHECKING:
    import argparse
    from collections.abc import Mapping, Sequence

    from crawler.crawlstate.keys import CrawlKeys

DEFAULT_TOP = 20
# Longest text a table cell shows; longer (hostile) values are cut.
CELL_WIDTH = 40
# (header, hash field) of each column after the host, in order.
HOST_COLUMNS = (
    ("requests", "requests"),
    ("bytes", "bytes"),
    ("2xx", "2xx"),
    ("3xx", "3xx"),
    ("4xx", "4xx"),
    ("5xx", "5xx"),
    ("errors", "errors"),
    ("traps", "traps"),
    ("last fetch (UTC)", "last_fetch"),
    ("delay", "delay"),
    ("reason", "reason"),
)
# The column of each host's timeout record: "slow", "paused until ...", both, or
# "?" for a record this crawler did not write.
HEALTH_COLUMN = "slow"
# The column of each host's crawl strategy and why, and its width (a reason with a
# depth limit is longer than other cells).
STRATEGY_COLUMN = "strategy"
STRATEGY_WIDTH = 60
_LEFT_ALIGNED = frozenset(
    {"host", "last fetch (UTC)", "reason", HEALTH_COLUMN, STRATEGY_COLUMN}
)
# A pause ending within this many seconds shows only its time of day.
_SAME_DAY = 86400.0


def add_hosts_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--top",
        type=int,
        default=DEFAULT_TOP,
        help=f"hosts, web: how many hosts to show (default {DEFAULT_TOP})",
    )
    parser.add_argument(
        "--sort",
        choices=RANK_METRICS,
        default="requests",
        help="hosts: the counter that ranks them (default requests)",
    )


def hosts(
    client: redis.Redis, keys: CrawlKeys, opts: argparse.Namespace, out: IO[str]
) -> int:
    """The busiest hosts: requests, bytes, statuses, errors, delay in force,
    whether they are slow or paused, and their crawl strategy."""
    rows = read_hosts(client, keys, sort=opts.sort, top=opts.top)
    if not rows:
        out.write(f"No {opts.sort} recorded for crawl {keys.prefix!r}\n")
    else:
        names = [host for host, _fields in rows]
        health = read_health(client, keys, names, now=time.time())
        out.write(host_table(rows, health, read_strategies(client, keys, names)))
    return 0


def read_hosts(
    client: redis.Redis, keys: CrawlKeys, *, sort: str, top: int
) -> list[tuple[str, dict[str, str]]]:
    """The *top* hosts by *sort*, with their counters: two round trips. A host
    whose key is not a hash (hostile data) is listed without counters."""
    rank = keys.traffic_rank(sort)
    ranked: list[bytes] = client.zrevrange(rank, 0, top - 1)  # type: ignore[assignment]
    names = [host.decode("utf-8", "surrogateescape") for host in ranked]
    pipe = client.pipeline(transaction=False)
    for name in names:
        pipe.hgetall(encoded(keys.traffic(name)))
    return [
        (name, {} if isinstance(fields, Exception) else _texts(fields))
        for name, fields in zip(names, pipe.execute(raise_on_error=False), strict=True)
    ]


def read_health(
    client: redis.Redis, keys: CrawlKeys, names: Sequence[str], *, now: float
) -> dict[str, str]:
    """What the ``slow`` column shows for each of *names*: one HMGET of the crawl's
    host records. A record that is not ours, or a health key that is not a hash,
    shows as ``?``."""
    if not names:
        return {}
    try:
        fields = [encoded(name) for name in names]
        records = cast("list[bytes | None]", client.hmget(keys.health, fields))
    except redis.ResponseError:  # WRONGTYPE: someone else's key
        return dict.fromkeys(names, "?")
    return {
        name: health_text(raw, now=now)
        for name, raw in zip(names, records, strict=True)
    }


def health_text(raw: bytes | None, *, now: float) -> str:
    """``slow``, ``paused until 12:34:56Z``, both, ``""`` (no record, or nothing to
    say), or ``?`` for a record this crawler did not write."""
    if raw is None:
        return ""
    try:
        health = HostHealth.from_json(raw)
    except BadHealthRecordError:
        return "?"
    parts = ["slow"] if health.slow else []
    if health.paused_until > now:
        try:
            moment = datetime.fromtimestamp(health.paused_until, UTC)
        except (ValueError, OverflowError, OSError):
            return "?"
        shape = (
            "%H:%M:%SZ"
            if health.paused_until - now < _SAME_DAY
            else "%Y-%m-%dT%H:%M:%SZ"
        )
        parts.append(f"paused until {moment.strftime(shape)}")
    return ", ".join(parts)


# --- the table -----------------------------------------------------------------------


def host_table(
    rows: Sequence[tuple[str, dict[str, str]]],
    health: Mapping[str, str] | None = None,
    strategies: Mapping[str, str] | None = None,
) -> str:
    """The aligned text table of *rows* (host, hash fields), with a ``slow`` column
    from *health* and a ``strategy`` column from *strategies* (host -> text) when
    given; never raises on what Redis held: values that are not numbers are shown
    as they are."""
    headers = ["host", *(header for header, _field in HOST_COLUMNS)]
    if health is not None:
        headers.append(HEALTH_COLUMN)
    if strategies is not None:
        headers.append(STRATEGY_COLUMN)
    lines = [headers]
    for host, fields in rows:
        line = [cell(host)]
        line += [cell(_shown(name, fields.get(name, ""))) for _h, name in HOST_COLUMNS]
        if health is not None:
            line.append(cell(health.get(host, "")))
        if strategies is not None:
            line.append(cell(strategies.get(host, ""), STRATEGY_WIDTH))
        lines.append(line)
    widths = [max(len(line[i]) for line in lines) for i in range(len(headers))]
    return "".join(
        "  ".join(
            text.ljust(width) if header in _LEFT_ALIGNED else text.rjust(width)
            for header, text, width in zip(headers, line, widths, strict=True)
        ).rstrip()
        + "\n"
        for line in lines
    )


def _shown(name: str, value: str) -> str:
    if name == "last_fetch":
        return utc_time(value)
    if name == "delay" and value:
        return f"{value}s" if _is_number(value) else value
    if name in {"requests", "bytes", "2xx", "3xx", "4xx", "5xx", "errors", "traps"}:
        return value or "0"
    return value


def utc_time(value: str) -> str:
    """``1795000000.5`` -> ``2026-11-18T11:06:40Z``; anything else as it is."""
    try:
        moment = datetime.fromtimestamp(float(value), UTC)
    except (ValueError, OverflowError, OSError):
        return value
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def cell(text: str, width: int = CELL_WIDTH) -> str:
    """*text* fit for a terminal: control characters escaped, cut to *width*."""
    shown = "".join(
        c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
        for c in text
    )
    return shown if len(shown) <= width else shown[: width - 1] + "…"


def _texts(fields: dict[bytes, bytes]) -> dict[str, str]:
    return {
        key.decode("utf-8", "replace"): value.decode("utf-8", "replace")
        for key, value in fields.items()
    }


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
