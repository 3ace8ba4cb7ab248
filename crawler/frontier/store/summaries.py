"""Each shard's summary as its last script reply gave it, and the choices it allows.

Every script reply ends with its shard's best ready score, first wake-up time and
lowest outstanding level; kept here, they let the scheduler choose a shard, time its
next wake-up and tell a stuck shard without asking Redis again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from crawler.policy.order import TIERS_PER_DEPTH, level_of_score, may_be_stranded

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence


@dataclass(slots=True)
class Summary:
    """What a shard's last reply said: its best ready score, when a host wakes (ms)."""

    best: float | None = None
    wake: float | None = None
    lowest_level: int | None = None


class ShardSummaries:
    """The summaries of every shard of a crawl, indexed by shard."""

    def __init__(self, shards: int, order: str) -> None:
        self._shards = shards
        self._order = (
            order  # FRONTIER_ORDER: how a score ranks (crawler/policy/order.py)
        )
        self._summaries = [Summary() for _ in range(shards)]

    def __getitem__(self, shard: int) -> Summary:
        return self._summaries[shard]

    def __len__(self) -> int:
        return self._shards

    def remember(self, shard: int, state: Sequence[bytes | int | None]) -> int:
        """Keep *shard*'s summary from a reply's tail; the values the script found
        damaged (its optional fourth element)."""
        best, wake, lowest_level, found = (*state, 0)[:4]
        self._summaries[shard] = Summary(
            float(best) if best is not None else None,
            float(wake) / 1000 if wake is not None else None,
            int(lowest_level) if lowest_level is not None else None,
        )
        return int(found or 0)

    def forget(self) -> None:
        """The crawl was deleted: nothing is known of any shard."""
        self._summaries = [Summary() for _ in range(self._shards)]

    def best_shard(
        self, among: Collection[int], deepest_level: int | None = None
    ) -> int | None:
        """The shard of *among* whose best ready host has the lowest BFS score, if
        any is no deeper than *deepest_level*."""
        scored = [
            (s.best, i)
            for i, s in enumerate(self._summaries)
            if s.best is not None
            and i in among
            and (
                deepest_level is None
                or level_of_score(s.best, self._order) <= deepest_level
            )
        ]
        return min(scored)[1] if scored else None

    def lowest_level(self) -> int | None:
        """The lowest level with requests queued or leased, over every shard."""
        levels = [s.lowest_level for s in self._summaries if s.lowest_level is not None]
        return min(levels) if levels else None

    def lowest_depth(self) -> int | None:
        """The lowest depth with requests queued or leased, over every shard."""
        level = self.lowest_level()
        return None if level is None else level // TIERS_PER_DEPTH

    def due_shards(self, now: float) -> list[int]:
        """Shards with a waiting host whose delay has ended by *now*."""
        return [
            i
            for i, s in enumerate(self._summaries)
            if s.wake is not None and s.wake <= now
        ]

    def next_wake(self) -> float | None:
        """When the first waiting host of any shard becomes ready."""
        wakes = [s.wake for s in self._summaries if s.wake is not None]
        return min(wakes) if wakes else None

    def has_work(self) -> bool:
        """Whether, as far as the last replies tell, any shard has requests queued."""
        return any(s.best is not None or s.wake is not None for s in self._summaries)

    def looks_stuck(self, shard: int) -> bool:
        """Requests outstanding, yet no host ready at the lowest level, none waiting."""
        summary = self._summaries[shard]
        low = summary.lowest_level
        return (
            low is not None
            and summary.wake is None
            and may_be_stranded(summary.best, low, self._order)
        )
