"""The few lines a crawl logs once as its frontier opens: what this crawl is.

Its name and key prefix, the Redis it uses, new or resumed (with counts and how to
start over), its seeds and scope, the depth limit, the delay in force by day and by
night and where each came from, and the pages a minute to expect. Pure: the facts
come in (``StartFacts``), text goes out; ``crawler.frontier.node.startreport``
gathers them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from crawler.policy.crawlidentity import CrawlIdentity, Verdict


@dataclass(frozen=True, slots=True)
class Delays:
    """The politeness settings in force, each with where it came from
    (``default``, ``settings.py``, ``-s``...)."""

    day: float
    night: float
    minimum: float
    jitter: float
    day_hours: str
    day_source: str
    night_source: str
    minimum_source: str
    key: str = "host"  # POLITENESS_KEY: what one delay is counted against


@dataclass(frozen=True, slots=True)
class Counts:
    """What the crawl's shards held as it opened."""

    queued: int
    in_flight: int
    held: int
    done: int
    failed: int


@dataclass(frozen=True, slots=True)
class StartFacts:
    """Everything the start-up lines say."""

    prefix: str
    redis: str  # the URL, password masked, and where it came from
    identity: CrawlIdentity
    verdict: Verdict
    counts: Counts
    depth_limit: int  # 0: none
    delays: Delays
    concurrency: int


def start_lines(facts: StartFacts) -> list[str]:
    """The start-up lines, first to last."""
    identity = facts.identity
    scope = identity.scope or "the spider's own"
    heading = (
        f"Crawl {facts.prefix!r} (spider {identity.spider}, key prefix "
        f"{facts.prefix!r}) in Redis {facts.redis}"
    )
    seeds = (
        f"Seeds: {identity.seeds_text()}; scope {scope}; depth limit "
        f"{facts.depth_limit or 'none'}"
    )
    return [
        heading,
        _state_line(facts),
        seeds,
        _delay_line(facts.delays),
        _pace_line(facts.delays, identity.hosts, facts.concurrency),
    ]


def utc_text(when: float) -> str:
    """*when* (seconds since the epoch) as ``2026-11-27 21:49 UTC``."""
    return datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _state_line(facts: StartFacts) -> str:
    counts = facts.counts
    held = f", {counts.held} held" if counts.held else ""
    tally = (
        f"{counts.queued} queued, {counts.in_flight} in flight{held}, "
        f"{counts.done} done, {counts.failed} failed"
    )
    started = utc_text(facts.identity.started_at)
    if facts.verdict is Verdict.JOIN:
        return f"Resumed (started {started}): {tally}; -s FRONTIER_RESET=1 starts over"
    if facts.verdict is Verdict.RENEW:
        return (
            f"New seeds over a finished crawl (started {started}): {tally}; URLs "
            "seen before stay seen (-s FRONTIER_RESET=1 forgets them)"
        )
    if counts.queued or counts.done or counts.in_flight:  # seeds pushed before
        return f"New crawl, started {started}, over what its keys held: {tally}"
    return f"New crawl, started {started}"


def _delay_line(delays: Delays) -> str:
    floor = (
        f"; never below {_seconds(delays.minimum)} (POLITENESS_MIN_DELAY, "
        f"{delays.minimum_source})"
        if delays.minimum
        else ""
    )
    return (
        f"Delay between two fetches of one host: {_seconds(delays.day)} by day "
        f"({delays.day_hours} host time; POLITENESS_DAY_DELAY, {delays.day_source}), "
        f"{_seconds(delays.night)} by night (POLITENESS_NIGHT_DELAY, "
        f"{delays.night_source}){floor}, plus up to {delays.jitter:.0%} jitter; a "
        "robots.txt Crawl-delay raises it for its host" + _server_note(delays.key)
    )


def _server_note(key: str) -> str:
    """What POLITENESS_KEY adds to the delay line: hosts that share a server."""
    if key == "ip":
        return "; hosts on one address share one delay (POLITENESS_KEY=ip)"
    if key == "domain":
        return "; hosts of one domain share one delay (POLITENESS_KEY=domain)"
    return ""


def _pace_line(delays: Delays, hosts: int, concurrency: int) -> str:
    busy = min(max(hosts, 1), concurrency)
    day = _rate(pages_per_minute(delays.day, delays, hosts=busy))
    night = _rate(pages_per_minute(delays.night, delays, hosts=busy))
    if not hosts:
        return f"Expect about {day} pages a minute a host by day, {night} by night"
    if delays.key != "host":
        return (
            f"Expect at most {day} pages a minute by day, {night} by night ({hosts} "
            f"seed hosts x 60 / delay; fewer where they share a "
            f"{'server' if delays.key == 'ip' else 'domain'}: one a delay for each)"
        )
    return (
        f"Expect about {day} pages a minute by day, {night} by night ({hosts} seed "
        f"hosts x 60 / delay; at most CONCURRENT_REQUESTS={concurrency} hosts at "
        "once); more as links reach new hosts"
    )


def pages_per_minute(delay: float, delays: Delays, *, hosts: int) -> float | None:
    """Pages a minute *hosts* give at *delay* (the mean of its jitter, never below
    the floor); None when nothing but response times bounds it (no delay)."""
    mean = max(delay, delays.minimum) * (1 + delays.jitter / 2)
    return None if mean <= 0 else hosts * 60 / mean


def _rate(rate: float | None) -> str:
    if rate is None:
        return "as many as responses allow (no delay)"
    return f"{rate:.0f}" if rate >= 10 else f"{rate:.1f}"


def _seconds(value: float) -> str:
    return f"{value:g} s"
