"""The crawl's politeness state: one per crawler, shared by the frontier and the
middlewares.

The frontier asks it for each host's delay when a fetch of that host is done; the
robots middleware tells it each host's ``Crawl-delay``; the timeouts middleware makes
hosts back off (``Retry-After``, a dead host's pause) and tells it of throttles and
answers, from which each host's delay learns (``crawler.policy.backoff``); the
frontier's heartbeat shares what was learnt through the crawl state
(``crawler.frontier.backoffs``); the traffic monitor reads the delay in force and its
reason. The formulas themselves are pure, in ``crawler.policy.politeness`` and
``crawler.policy.backoff``.
"""

from __future__ import annotations

import os
import random
import re
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from crawler.policy.backoff import Learnt, Throttle, after_answer, after_throttle
from crawler.policy.politeness import Delay, DelayReason
from crawler.policy.timezones import is_known_zone

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    from scrapy.statscollectors import StatsCollector

    from crawler.context.runsettings import RunSettingsHolder
    from crawler.policy.politeness import PolitenessConfig

# Hosts whose Crawl-delay (or back-off) this process remembers at most.
MAX_REMEMBERED_HOSTS = 65536


class HostDelays:
    """Each host's delay in force, with what robots.txt said about it."""

    def __init__(
        self,
        run: RunSettingsHolder,
        stats: StatsCollector | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.run_settings = run  # read each time: the runtime replaces what it holds
        self._stats = stats
        self._rng = rng or random.Random()  # noqa: S311 (jitter, not secrets)
        self._crawl_delays: dict[str, float] = {}
        self._backoffs: dict[str, tuple[float, DelayReason]] = {}  # host -> until, why
        self._learnt: dict[str, Learnt] = {}  # host -> its learnt delay
        # Learnt delays changed since the crawl state last had them (None: forgotten).
        self._unshared: dict[str, Learnt | None] = {}

    @property
    def config(self) -> PolitenessConfig:
        """The politeness policy in force now."""
        return self.run_settings.current.politeness

    def set_crawl_delay(self, host: str, seconds: float | None) -> None:
        """What *host*'s robots.txt asks for our token (``None``: nothing).

        Bounded: the oldest entries go first. The robots middleware keeps fewer
        origins than this and sets the delay again whenever it loads a record."""
        self._crawl_delays.pop(host, None)
        if seconds is None:
            return
        self._crawl_delays[host] = seconds
        if len(self._crawl_delays) > MAX_REMEMBERED_HOSTS:
            del self._crawl_delays[next(iter(self._crawl_delays))]

    def back_off(self, host: str, until: float, reason: DelayReason) -> None:
        """Fetch *host* again no sooner than *until* (a ``Retry-After``, a pause)."""
        current = self._backoffs.get(host)
        if current is None or current[0] < until:
            self._backoffs[host] = (until, reason)
        if len(self._backoffs) > MAX_REMEMBERED_HOSTS:  # the oldest back-off goes first
            del self._backoffs[next(iter(self._backoffs))]

    def in_force(self, host: str, *, now: float) -> Delay:
        delay = self._policy_delay(host, now)
        for floor in (self._learnt_delay(host), self._backoff(host, now)):
            if floor is not None and floor.seconds > delay.seconds:
                delay = floor
        return delay

    def delay_for(self, host: str, *, now: float) -> float:
        """Seconds *host* waits after this fetch: the delay in force plus jitter,
        never under what the host taught (its learnt delay), or longer while the
        host backs off."""
        delay = self._policy_delay(host, now)
        if self._stats is not None and delay.reason == "hourly-cap":
            self._stats.inc_value("politeness/hourly_cap")
        seconds = self.config.jittered(delay.seconds, self._rng.random())
        for floor in (self._learnt_delay(host), self._backoff(host, now)):
            if floor is not None:
                seconds = max(seconds, floor.seconds)
        return seconds

    # --- the delay each host taught ------------------------------------------------

    def throttled(self, host: str, reason: Throttle, *, now: float) -> None:
        """*host* answered 429 or 503, or timed out: its learnt delay rises."""
        backoff = self.config.backoff
        if not backoff.enabled:
            return
        before = self._learnt.get(host)
        learnt = after_throttle(
            backoff, before, in_force=self.in_force(host, now=now).seconds,
            reason=reason, now=now,
        )  # fmt: skip
        self._remember(host, learnt)
        if self._stats is not None:
            self._stats.inc_value(f"politeness/throttled/{reason}")
            if before is None:
                self._stats.inc_value("politeness/hosts_throttled")

    def answered(self, host: str, *, now: float) -> None:
        """*host* answered without a throttle: after a quiet run its learnt delay
        falls, and once at the policy's own delay the host is forgotten."""
        learnt = self._learnt.get(host)
        if learnt is None:
            return
        policy = self._policy_delay(host, now)
        after = after_answer(
            self.config.backoff, learnt, policy_delay=policy.seconds, now=now
        )
        if after is None:
            del self._learnt[host]
            self._unshared[host] = None
        elif after.delay != learnt.delay:
            self._remember(host, after)
        else:
            self._learnt[host] = after  # this node's count only: nothing to share

    def learnt(self, host: str) -> Learnt | None:
        """What *host* taught, if anything."""
        return self._learnt.get(host)

    def adopt(self, learnt: Mapping[str, Learnt]) -> None:
        """Learnt delays read from the crawl state (hosts this node just took over,
        or a restart): a host's own record here, if newer, wins."""
        for host, record in learnt.items():
            mine = self._learnt.get(host)
            if mine is None or mine.since < record.since:
                self._learnt[host] = record
        self._bound(self._learnt)

    def unshared(self) -> dict[str, Learnt | None]:
        """The learnt delays changed since the last call (None: forgotten), for
        the crawl state; given back with ``unshare_failed`` if writing failed."""
        changed, self._unshared = self._unshared, {}
        return changed

    def unshare_failed(self, changed: Mapping[str, Learnt | None]) -> None:
        """Writing *changed* failed (Redis away): keep it for the next heartbeat,
        under anything changed since."""
        self._unshared = {**changed, **self._unshared}
        self._bound(self._unshared)

    def _remember(self, host: str, learnt: Learnt) -> None:
        self._learnt.pop(host, None)  # the latest change goes last: bounded by age
        self._learnt[host] = learnt
        self._bound(self._learnt)
        self._unshared[host] = learnt
        self._bound(self._unshared)

    def _policy_delay(self, host: str, now: float) -> Delay:
        """The delay the politeness rules give *host* (its Crawl-delay included),
        before any back-off or learnt delay."""
        return self.config.in_force(
            host, now=now, crawl_delay=self._crawl_delays.get(host)
        )

    def _learnt_delay(self, host: str) -> Delay | None:
        learnt = self._learnt.get(host)
        return None if learnt is None else Delay(learnt.delay, "throttled")

    @staticmethod
    def _bound(hosts: dict[str, Any]) -> None:
        """At most MAX_REMEMBERED_HOSTS: the oldest go first."""
        while len(hosts) > MAX_REMEMBERED_HOSTS:
            del hosts[next(iter(hosts))]

    def _backoff(self, host: str, now: float) -> Delay | None:
        """How much longer *host* backs off, and why; forgets ended back-offs."""
        if (backoff := self._backoffs.get(host)) is None:
            return None
        until, reason = backoff
        if until <= now:
            del self._backoffs[host]
            return None
        return Delay(until - now, reason)

    def shortest(self) -> float:
        return self.config.shortest()


_LOCALTIME = Path("/etc/localtime")
_TIMEZONE_FILE = Path("/etc/timezone")
_POSIX_FIXED_OFFSET = re.compile(r"[A-Za-z]{3,}([+-]?)(\d{1,2})")
_TZIF_TREES = frozenset({"posix", "right"})


def machine_zone(
    *,
    environ: Mapping[str, str] = os.environ,
    localtime: Path = _LOCALTIME,
    timezone_file: Path = _TIMEZONE_FILE,
) -> str:
    """The IANA name of this machine's zone: the default zone of unplaced hosts.

    Tried in turn: ``TZ`` (``Europe/Berlin``, ``:Europe/Berlin``, a path into a
    zoneinfo tree, or a fixed POSIX offset such as ``JST-9``), the ``/etc/localtime``
    symlink, Debian's ``/etc/timezone``, then UTC. A name ``zoneinfo`` cannot load
    (a POSIX DST rule like ``CET-1CEST,M3.5.0,M10.5.0/3``) is skipped: a guess at
    the operator's zone is better than a crawler that will not start.
    """
    candidates = _zone_candidates(environ, localtime, timezone_file)
    return next((name for name in candidates if name and is_known_zone(name)), "UTC")


def _zone_candidates(
    environ: Mapping[str, str], localtime: Path, timezone_file: Path
) -> Iterator[str]:
    """Possible zone names, best first, computed only as far as they are needed."""
    tz = environ.get("TZ", "").strip().removeprefix(":")
    yield _zone_key(tz)
    yield _posix_fixed_offset(tz)
    yield from (_zone_key(str(target)) for target in _symlink_chain(localtime))
    yield _first_line(timezone_file)


def _zone_key(text: str) -> str:
    """The zone key in a name or zoneinfo path (``.../zoneinfo/posix/Asia/Tokyo``).

    The ``posix/`` and ``right/`` trees hold the same zones (``right/`` counting
    leap seconds); the plain name is the one every machine has.
    """
    parts = PurePosixPath(text).parts
    if "zoneinfo" in parts:
        parts = parts[len(parts) - parts[::-1].index("zoneinfo") :]
    elif parts[:1] == ("/",):
        return ""
    if parts[:1] and parts[0] in _TZIF_TREES:
        parts = parts[1:]
    return "/".join(parts)


def _posix_fixed_offset(tz: str) -> str:
    """``JST-9`` -> ``Etc/GMT-9`` (POSIX and ``Etc/GMT`` share the inverted sign)."""
    if not (match := _POSIX_FIXED_OFFSET.fullmatch(tz)):
        return ""
    sign, hours = match[1] or "+", int(match[2])
    return f"Etc/GMT{sign}{hours}" if hours else "UTC"


def _symlink_chain(path: Path) -> Iterator[Path]:
    """Each path *path* links to in turn; the first is the name the admin chose."""
    for _ in range(8):  # a loop of links ends here, not in a RecursionError
        try:
            target = path.readlink()
        except (OSError, ValueError):  # not a link, missing, or unreadable
            return
        path = path.parent / target
        yield path


def _first_line(path: Path) -> str:
    """The first line of *path* stripped, or ``""`` if it cannot be read."""
    try:
        with path.open(encoding="utf-8") as file:
            return file.readline(256).strip()
    except (OSError, ValueError):
        return ""
