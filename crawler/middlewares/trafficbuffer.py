"""What each host's downloads added since the traffic counters were last written.

The traffic middleware (``crawler.middlewares.traffic``) counts into a
``TrafficBuffer``; each flush takes it whole and puts it back if Redis could not be
reached, so no count is lost while Redis is away.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

# Hash fields of a host's counters, in table order; statuses are counted by class.
STATUS_CLASSES = ("2xx", "3xx", "4xx", "5xx")
COUNTERS = ("requests", "bytes", *STATUS_CLASSES, "other", "errors", "failures")


def status_class(status: int) -> str:
    """``"2xx"``... ``"5xx"`` for an HTTP status, ``"other"`` for anything else."""
    if 200 <= status < 600:
        return f"{status // 100}xx"
    return "other"


@dataclass(slots=True)
class HostTraffic:
    """What one host's downloads added since the last flush."""

    counts: Counter[str] = field(default_factory=Counter)
    last_fetch: float | None = None

    def merge(self, other: HostTraffic) -> None:
        self.counts.update(other.counts)
        if other.last_fetch is not None:
            self.last_fetch = max(self.last_fetch or 0.0, other.last_fetch)


class TrafficBuffer:
    """Counts by host, taken whole by each flush (and put back if it failed)."""

    def __init__(self) -> None:
        self._hosts: dict[str, HostTraffic] = {}

    def __bool__(self) -> bool:
        return bool(self._hosts)

    def _host(self, host: str) -> HostTraffic:
        if (found := self._hosts.get(host)) is None:
            found = self._hosts[host] = HostTraffic()
        return found

    def request(self, host: str) -> None:
        self._host(host).counts["requests"] += 1

    def response(
        self,
        host: str,
        *,
        status: int,
        size: int,
        now: float,
        failed: bool | None = None,
    ) -> None:
        """Count a response; *failed* (default: a 4xx or 5xx status) also counts it
        in ``failures``, the rank of the dashboard's most failing hosts."""
        traffic = self._host(host)
        traffic.counts["bytes"] += size
        traffic.counts[status_class(status)] += 1
        if status >= 400 if failed is None else failed:
            traffic.counts["failures"] += 1
        traffic.last_fetch = now

    def error(self, host: str, *, now: float) -> None:
        traffic = self._host(host)
        traffic.counts["errors"] += 1
        traffic.counts["failures"] += 1
        traffic.last_fetch = now

    def trap(self, host: str) -> None:
        """Count a link of *host* cut as a spider trap, or a soft 404 of it."""
        self._host(host).counts["traps"] += 1

    def take(self) -> dict[str, HostTraffic]:
        taken, self._hosts = self._hosts, {}
        return taken

    def put_back(self, taken: dict[str, HostTraffic]) -> None:
        for host, traffic in taken.items():
            self._host(host).merge(traffic)
