"""The leases this node holds: which request each belongs to, and their retries."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from crawler.frontier.acks import LEASE_META_KEY
from crawler.policy.hosts import host_of

if TYPE_CHECKING:
    from collections.abc import Mapping

    from scrapy import Request

    from crawler.frontier.store import Lease

# Meta of a leased request: the node it was handed to (for page records).
NODE_META_KEY = "frontier_node"


@dataclass(frozen=True, slots=True)
class Held:
    """A request this node holds a lease for, and how to tell its retries apart."""

    lease: Lease
    host: str
    retry_times: int = 0
    redirect_times: int = 0
    # The leased request's own meta, not a copy: the timeouts middleware sets its
    # tier when it is fetched, after the lease is taken (tier 1 on a slow host).
    meta: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def tier(self) -> Any:
        """The timeout tier the leased request was fetched at."""
        return self.meta.get("tier", 0)


class HeldLeases:
    def __init__(self) -> None:
        self._held: dict[str, Held] = {}

    def hold(self, lease: Lease, request: Request) -> None:
        """Mark *request* as leased to this node (in its meta, and here)."""
        request.meta[LEASE_META_KEY] = str(lease)
        self._held[str(lease)] = Held(
            lease,
            host_of(request.url),
            request.meta.get("retry_times", 0),
            request.meta.get("redirect_times", 0),
            request.meta,
        )

    def done(self, request: Request, at: float | None = None) -> Held | None:
        """The lease of *request*, now done (its download ended *at*, if known);
        None if it was released already."""
        held = self._held.pop(request.meta.get(LEASE_META_KEY, ""), None)
        if held is None or at is None:
            return held
        return replace(held, lease=replace(held.lease, done_at=at))

    def replaced(self, request: Request) -> Held | None:
        """The lease *request* replaces, if it retries, redirects or escalates (to a
        looser timeout tier) a leased request.

        A retry, redirect or escalation copies the meta of the leased request; its lease is
        released once the new request is queued. A request that merely copied a
        response's meta (a child) leaves the parent's lease alone. Either way the
        lease key is taken out of the new request's meta.
        """
        key = request.meta.pop(LEASE_META_KEY, None)
        held = self._held.get(key) if key else None
        if held is None:
            return None
        retried = request.meta.get("retry_times", 0) > held.retry_times
        redirected = request.meta.get("redirect_times", 0) > held.redirect_times
        escalated = request.meta.get("tier", 0) > held.tier
        if retried or redirected or escalated:
            return self._held.pop(key)
        return None

    def leases(self) -> list[Lease]:
        return [held.lease for held in self._held.values()]

    def clear(self) -> None:
        self._held.clear()
