"""The leases this node holds: which request each belongs to, and their retries."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from crawler.meta import HELD_TIMES, LEASE, REQUEUED, TIER
from crawler.policy.hosts import host_of

if TYPE_CHECKING:
    from collections.abc import Mapping

    from scrapy import Request

    from crawler.frontier.store.roundtrip import Lease


@dataclass(frozen=True, slots=True)
class Held:
    """A request this node holds a lease for, and how to tell its retries apart."""

    lease: Lease
    host: str
    retry_times: int = 0
    redirect_times: int = 0
    held_times: int = 0
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
    def tier(self) -> Any:
        """The timeout tier the leased request was fetched at."""
        return self.meta.get(TIER, 0)


class HeldLeases:
    def __init__(self) -> None:
        self._held: dict[str, Held] = {}

    def hold(self, lease: Lease, request: Request) -> None:
        """Mark *request* as leased to this node (in its meta, and here)."""
        request.meta[LEASE] = str(lease)
        self._held[str(lease)] = Held(
            lease,
            host_of(request.url),
            request.meta.get("retry_times", 0),
            request.meta.get("redirect_times", 0),
            request.meta.get(HELD_TIMES, 0),
            request.meta,
            request,
        )

    def done(self, request: Request, at: float | None = None) -> Held | None:
        """The lease of *request*, now done (its download ended *at*, if known);
        None if it was released already."""
        held = self._held.pop(request.meta.get(LEASE, ""), None)
        if held is None or at is None:
            return held
        return replace(held, lease=replace(held.lease, done_at=at))

    def replaced(self, request: Request) -> Held | None:
        """The lease *request* replaces, if it retries, redirects or escalates (to a
        looser timeout tier) a leased request.

        A retry, redirect, escalation or hold (retry-later) copies the meta of the leased request; its lease is
        released once the new request is queued. A request that merely copied a
        response's meta (a child) leaves the parent's lease alone. Either way the
        lease key is taken out of the new request's meta.
        """
        key = request.meta.pop(LEASE, None)
        held = self._held.get(key) if key else None
        if held is None:
            return None
        reasons = {
            "redirect": request.meta.get("redirect_times", 0) > held.redirect_times,
            "retry": request.meta.get("retry_times", 0) > held.retry_times,
            "escalation": request.meta.get(TIER, 0) > held.tier,
            "hold": request.meta.get(HELD_TIMES, 0) > held.held_times,
            "requeue": request.meta.get(REQUEUED, 0) > held.meta.get(REQUEUED, 0),
        }
        reason = next((name for name, true in reasons.items() if true), "")
        if reason:
            return replace(self._held.pop(key), replaced_by=reason)
        return None

    def leases(self) -> list[Lease]:
        return [held.lease for held in self._held.values()]

    def clear(self) -> None:
        self._held.clear()
