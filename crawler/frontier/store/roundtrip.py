"""What one round trip to the frontier's shards carries, and what comes back.

Requests to push (``Pending``), leases to release (``Ack``), where to pop from
(``PopOrder``), the lease popped (``Lease``) and what the trip did (``Flushed``):
plain values, shared by the scheduler, the store and the leases this node holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from scrapy import Request


@dataclass(frozen=True, slots=True)
class Pending:
    """A request accepted locally, waiting to be pushed to its shard: queued, or held
    until *hold_until* (epoch seconds) when it is to be tried again later. *revive*
    is the fingerprint (hex) of a seed that is queued again if it failed for good.
    *depth_key* names it while a shorter path to it may still be found (depth
    repair, see the push script)."""

    shard: int
    host: str
    level: int
    dedup: str | bytes
    entry: str
    hold_until: float | None = None
    revive: str = ""
    depth_key: str = ""
    # Its Request.priority (ranks it within its level, crawler/policy/order.py).
    priority: int = 0
    # The request itself, to drop it loudly if Redis finds it a duplicate.
    request: Request | None = field(default=None, compare=False, repr=False)
    # FRONTIER_ORDER = importance (crawler/policy/importance.py): the URL's key
    # (crawler.frontier.importance.url_key), its importance if it is new, and what
    # one more in-link adds if it is queued already.
    url_key: str = ""
    importance: float = 0.0
    # Its backlink importance if it is new; what one more in-link adds to that
    # (credit) and to its importance (gain); and to its host's term (host_credit).
    backlinks: float = 0.0
    credit: float = 0.0
    gain: float = 0.0
    host_credit: float = 0.0
    # Its host is crawled deepest first (FRONTIER_SITE_STRATEGY = dfs).
    deepest_first: bool = False


@dataclass(frozen=True, slots=True)
class Lease:
    """A request handed out to this node: its shard and the lease id there; whether
    it is a page fetched too deep whose links are to be followed again; and, once
    done, when its download ended (the host's delay counts from then, not from the
    ack, which waits for the page's record)."""

    shard: int
    lease_id: str
    reparse: bool = field(default=False, compare=False)
    done_at: float | None = field(default=None, compare=False)
    # In importance order, its importance, backlink importance and the in-links
    # counted for it.
    importance: float | None = field(default=None, compare=False)
    backlinks: float = field(default=0.0, compare=False)
    inlinks: int = field(default=0, compare=False)
    # The host whose queue it came from (its entry's URL may be relative to it).
    host: str = field(default="", compare=False)

    def __str__(self) -> str:
        return f"{self.shard}:{self.lease_id}"


class Ack(NamedTuple):
    """A lease done: the host's delay from now, and what became of the request.

    *fate* is empty for a lease replaced by a retry of its request; *fingerprint*
    (hex) is given for a request that failed for good, which is then kept for
    ``scrapy frontier retry``; *untouched* means nothing reached the host (robots.txt
    forbade the URL), so the host's delay is not spent on it; *not_before* (epoch
    seconds, 0 for none) keeps the host waiting until its server is free
    (``POLITENESS_KEY``).
    """

    lease: Lease
    delay: float
    fate: str = ""
    fingerprint: str = ""
    untouched: bool = False
    not_before: float = 0.0


@dataclass(frozen=True, slots=True)
class PopOrder:
    """Which shard to lease a request from, for which node, under which limits."""

    shard: int
    node_id: str
    default_delay: float
    deepest_level: int | None = None


@dataclass(frozen=True, slots=True)
class Flushed:
    """What a flush did: whether each pushed request was new, how many leases were
    still held when acked, the request popped, if one was asked for, and whether
    the pop was refused because another node owns the shard now (fencing),
    how many pushes were requests found again by a shorter path (depth repair), and
    which pushed requests were new but over their host's budget (not queued).
    """

    new: list[bool]
    acked: int
    popped: tuple[Lease, bytes] | None = None
    fenced: bool = False
    shortened: int = 0
    over_budget: list[bool] = field(default_factory=list)


def ms(seconds: float) -> int:
    """Epoch seconds as the scripts take them: whole milliseconds."""
    return round(seconds * 1000)
