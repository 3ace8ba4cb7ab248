"""The scores of ``bench.sitestrategy``: what each crawl made of each labelled site,
read from Redis (the strategy a crawl last wrote) and the records (the history the
next crawl starts from), and the table of them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from crawler.crawlstate.keys import CrawlKeys
from crawler.crawlstate.sitecounters import evidence_of
from crawler.policy.siteclass import classify
from crawler.records.database import RecordsDatabase
from crawler.records.sites import SiteTable

if TYPE_CHECKING:
    from pathlib import Path

    import redis

    from bench.sitestrategy import Labelled

KEYS = CrawlKeys("bfs")
# What each label expects auto to make of a host.
EXPECTED = {"portal": "bfs", "specialised": "dfs"}
# A crawl name no crawl has: the history as any next crawl starts from it.
NEXT_CRAWL = "the next crawl"


def observed(client: redis.Redis, sites: list[Labelled]) -> dict[str, dict[str, Any]]:
    """Each site's evidence and strategy as the crawl last wrote them in Redis."""
    found = {}
    for s in sites:
        fields = client.hgetall(KEYS.site(s.host))
        evidence = evidence_of(fields)  # type: ignore[arg-type]
        observation = evidence.observation()
        strategy = fields.get(b"strategy", b"").decode()  # type: ignore[union-attr]
        found[s.name] = {
            "pages": observation.pages,
            "links": observation.links,
            "leaving": observation.leaving,
            "share": round(observation.share, 4),
            "depth": observation.depth,
            "strategy": strategy,
            "correct": strategy.startswith(EXPECTED[s.label]),
        }
    return found


def from_history(database: Path, sites: list[Labelled]) -> dict[str, dict[str, Any]]:
    """What the next crawl starts from for each site: the records' history alone."""
    records = RecordsDatabase(f"sqlite:///{database}").open(create=False)
    try:
        rows = SiteTable(records).read()
    finally:
        records.close()
    found = {}
    for s in sites:
        row = rows.get(s.host)
        history = row.history_before(NEXT_CRAWL) if row is not None else None
        found[s.name] = (
            {"strategy": None, "correct": False}
            if history is None
            else {
                "crawls": history.crawls,
                "share": history.share,
                "depth": history.depth,
                "strategy": (c := classify(history)).strategy + f" ({c.why})",
                "correct": classify(history).strategy == EXPECTED[s.label],
            }
        )
    return found


def score(found: dict[str, dict[str, Any]]) -> str:
    right = sum(1 for entry in found.values() if entry["correct"])
    return f"{right}/{len(found)}"


def table(sites: list[Labelled], crawls: list[dict[str, Any]]) -> str:
    """One line a site: its label, what each crawl saw and made of it."""
    head = ["site", "label", "pages", "links leave", "depth"]
    for c in crawls:
        head += [f"crawl {c['crawl']}", f"history after {c['crawl']}"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for s in sites:
        last = crawls[-1]["hosts"][s.name]
        row = [
            s.name,
            s.label,
            str(last["pages"]),
            f"{last['share']:.1%}",
            str(last["depth"]),
        ]
        for c in crawls:
            row += [
                c["hosts"][s.name]["strategy"],
                c["history"][s.name]["strategy"] or "-",
            ]
        lines.append("| " + " | ".join(row) + " |")
    scores = ["**score**", "", "", "", ""]
    for c in crawls:
        scores += [f"**{score(c['hosts'])}**", f"**{score(c['history'])}**"]
    lines.append("| " + " | ".join(scores) + " |")
    return "\n".join(lines)


def rates(figures: dict[str, Any]) -> str:
    rate = figures["pages_per_second"] or 0.0
    cpu = figures["cpu_ms_per_response"] or 0.0
    return (
        f"{figures['responses']} responses in {figures['seconds'] or 0:.1f} s, "
        f"{rate:.1f} responses/s, {cpu:.2f} CPU ms a response"
    )
