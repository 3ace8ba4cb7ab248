"""This node's own leases: which request each belongs to, and their retries.

Words: an *own lease* is a lease this node took with a pop and has not released;
*held* means only retry-later (the shards' ``held`` zset, ``crawler.frontier.holds``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from crawler.meta import (
    FATE,
    HELD_TIMES,
    LEASE,
    REPARSED,
    REQUEUED,
    SERVER_BUSY_UNTIL,
    SERVER_GATE,
    TIER,
)
from crawler.policy.fates import UNTOUCHED_FATES
from crawler.policy.hosts import host_of

if TYPE_CHECKING:
    from collections.abc import Mapping

    from scrapy import Request

    from crawler.frontier.store.roundtrip import Lease


@dataclass(frozen=True, slots=True)
class OwnLease:
    """A request under a lease this node took, and how to tell its retries apart."""

    lease: Lease
    host: str
    retry_times: int = 0
    redirect_times: int = 0
    held_times: int = 0  # times held for later (retry-later)
    # The leased request's own meta, not a copy: the timeouts middleware sets its
    # tier when it is fetched, after the lease is taken (tier 1 on a slow host), and
    # the retry-later middleware its fate.
    meta: Mapping[str, Any] = field(default_factory=dict, compare=False)
    request: Request | None = field(default=None, compare=False)
    # Why a new request took this lease over: "retry", "redirect", "escalation",
    # "hold" (retry-later), "requeue" (a reparse the page store could not answer);
    # empty while it is the request's own lease.
    replaced_by: str = ""

    @property
    def fate(self) -> str:
        """The fate its ack records: the one marked (the retry-later middleware's),
        else ``fetched``; ``redirected`` for a lease a redirect took over, none for
        any other replacement (the new request takes the fate on)."""
        if self.replaced_by:
            return "redirected" if self.replaced_by == "redirect" else ""
        return str(self.meta.get(FATE) or "fetched")

    @property
    def untouched(self) -> bool:
        """Whether its host was left untouched: robots.txt forbade the URL, the page
        was reparsed from the store, or a reparse was requeued (no delay spent)."""
        return (
            self.meta.get(FATE, "") in UNTOUCHED_FATES
            or bool(self.meta.get(REPARSED))
            or self.replaced_by == "requeue"
        )

    @property
    def not_before(self) -> float:
        """Until when its host waits for its server (the request went back because
        the server's gate was taken); 0 if it need not."""
        until = self.meta.get(SERVER_BUSY_UNTIL, 0.0)
        return float(until) if isinstance(until, (int, float)) else 0.0

    @property
    def server_gate(self) -> tuple[str, str] | None:
        """The server whose gate this lease holds, and the lease as its holder."""
        gate = self.meta.get(SERVER_GATE)
        holder = str(self.lease)
        if isinstance(gate, list | tuple) and len(gate) == 2 and gate[1] == holder:
            return str(gate[0]), holder
        return None

    @property
    def tier(self) -> Any:
        """The timeout tier the leased request was fetched at."""
        return self.meta.get(TIER, 0)


class OwnLeases:
    """The own leases of this node, by lease key."""

    def __init__(self) -> None:
        self._own: dict[str, OwnLease] = {}

    def take(self, lease: Lease, request: Request) -> None:
        """Mark *request* as leased to this node (in its meta, and here)."""
        request.meta[LEASE] = str(lease)
        self._own[str(lease)] = OwnLease(
            lease,
            host_of(request.url),
            request.meta.get("retry_times", 0),
            request.meta.get("redirect_times", 0),
            request.meta.get(HELD_TIMES, 0),
            request.meta,
            request,
        )

    def done(self, request: Request, at: float | None = None) -> OwnLease | None:
        """The lease of *request*, now done (its download ended *at*, if known);
        None if it was released already."""
        own = self._own.pop(request.meta.get(LEASE, ""), None)
        if own is None or at is None:
            return own
        return replace(own, lease=replace(own.lease, done_at=at))

    def replaced(self, request: Request) -> OwnLease | None:
        """The lease *request* replaces, if it retries, redirects or escalates (to a
        looser timeout tier) a leased request.

        A retry, redirect, escalation or hold (retry-later) copies the meta of the leased request; its lease is
        released once the new request is queued. A request that merely copied a
        response's meta (a child) leaves the parent's lease alone. Either way the
        lease key is taken out of the new request's meta.
        """
        key = request.meta.pop(LEASE, None)
        own = self._own.get(key) if key else None
        if own is None:
            return None
        reasons = {
            "redirect": request.meta.get("redirect_times", 0) > own.redirect_times,
            "retry": request.meta.get("retry_times", 0) > own.retry_times,
            "escalation": request.meta.get(TIER, 0) > own.tier,
            "hold": request.meta.get(HELD_TIMES, 0) > own.held_times,
            "requeue": request.meta.get(REQUEUED, 0) > own.meta.get(REQUEUED, 0),
        }
        reason = next((name for name, true in reasons.items() if true), "")
        if reason:
            return replace(self._own.pop(key), replaced_by=reason)
        return None

    def leases(self) -> list[Lease]:
        return [own.lease for own in self._own.values()]

    def clear(self) -> None:
        self._own.clear()
