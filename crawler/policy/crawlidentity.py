"""What a crawl is (its seeds, spider and scope), and whether a new start may use
the keys of one that is there. Pure: no I/O, no clock.

A crawl's identity is written when it first opens (``crawler.crawlstate.identity``).
A later start with seeds of its own (``-a seeds``, ``-a seeds_file``) either
resumes that crawl (the same seeds), starts it anew (the crawl there is finished:
its seen URLs stay seen), or is refused (the crawl there is unfinished: it would
go on fetching the other crawl's queue and never say so). A start without seeds
(``scrapy crawl bfs`` alone, a second node, a spider of the user's own) always
joins what is there: seeds pushed later are additions, not a new identity.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

# The seeds an identity keeps to show (all of them are in its digest).
SHOWN_SEEDS = 3


class Verdict(StrEnum):
    """What a start does with the crawl its keys hold."""

    NEW = "new"  # no identity there: this start writes one
    JOIN = "join"  # no seeds given, or the same: resume or join the crawl there
    RENEW = "renew"  # new seeds over a finished crawl: a new identity, seen kept
    CONFLICT = "conflict"  # new seeds over an unfinished crawl: refused


@dataclass(frozen=True, slots=True)
class CrawlIdentity:
    """The crawl's spider, scope and seeds (a few shown, all in the digest), and
    when it first opened (seconds since the epoch, UTC)."""

    spider: str
    scope: str
    seeds: tuple[str, ...]
    seed_count: int
    seed_digest: str
    started_at: float
    hosts: int = 0  # distinct hosts among the seeds

    @classmethod
    def of(
        cls, spider: str, scope: str, seeds: Iterable[str], started_at: float
    ) -> CrawlIdentity:
        unique = sorted(set(seeds))
        return cls(
            spider=spider,
            scope=scope,
            seeds=tuple(unique[:SHOWN_SEEDS]),
            seed_count=len(unique),
            seed_digest=seeds_digest(unique),
            started_at=started_at,
            hosts=len({_host(seed) for seed in unique}),
        )

    def seeds_text(self) -> str:
        """The seeds as one short phrase: ``http://a/, http://b/ and 3 more``."""
        if not self.seed_count:
            return "no seeds of its own"
        more = self.seed_count - len(self.seeds)
        return ", ".join(self.seeds) + (f" and {more} more" if more > 0 else "")


def _host(url: str) -> str:
    """The host part of a seed URL (lower case), without parsing it again."""
    rest = url.split("://", 1)[-1]
    return rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0].lower()


def seeds_digest(seeds: Iterable[str]) -> str:
    """SHA-256 of the set of *seeds*: the same seeds in any order, the same digest."""
    text = "\n".join(sorted(set(seeds)))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def verdict(
    stored: CrawlIdentity | None, given: CrawlIdentity, *, work_left: bool
) -> Verdict:
    """What a start with identity *given* does with the crawl whose identity is
    *stored* (None: no crawl, or one written before identities were kept)."""
    if stored is None:
        return Verdict.NEW
    if not given.seed_count or given.seed_digest == stored.seed_digest:
        return Verdict.JOIN
    return Verdict.CONFLICT if work_left else Verdict.RENEW


def conflict_message(  # noqa: PLR0913 (keyword-only: each is a fact of the line)
    *,
    prefix: str,
    redis: str,
    stored: CrawlIdentity,
    started: str,
    queued: int,
    in_flight: int,
    done: int,
) -> str:
    """The one line that refuses new seeds over an unfinished crawl, with the three
    ways on."""
    return (
        f"Redis {redis} holds another unfinished crawl under the key prefix "
        f"{prefix!r} (spider {stored.spider}, seeds {stored.seeds_text()}, started "
        f"{started}; {queued} queued, {in_flight} in flight, {done} done), and these "
        "seeds are not its seeds: rerun without seeds (or with the same) to resume "
        "it, add -s FRONTIER_RESET=1 to delete it and start over, or -s "
        "FRONTIER_KEY_PREFIX=NAME to run this crawl beside it"
    )
