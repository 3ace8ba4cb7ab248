"""What a fault scenario measures: from the site's request log and the records database.

Nothing here trusts the crawler's own account: pages fetched are the distinct page URLs
the site answered 200, duplicates are its 200 answers beyond the first per URL; the
records database is read only to check it against them.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from typing import TYPE_CHECKING, Any

from tests.site import SiteSpec, bfs_depths, is_robots_path, url_of

if TYPE_CHECKING:
    from pathlib import Path

    from bench.procs import SiteShape

# The site's default --seed (the benchmark does not change it).
SITE_SEED = 1
# Fates that are not failures (crawler/policy/fates.py).
NOT_FAILED = ("fetched", "redirected")
# Failed URLs listed by name in the JSON results, at most.
SAMPLE = 20


def reachable(shape: SiteShape, port: int) -> set[str]:
    """Every page within scope: those linked from the seeds (every host's root) on the
    seed hosts, at any depth (the benchmark sets ``DEPTH_LIMIT=0``)."""
    spec = SiteSpec(shape.hosts, shape.pages, shape.links, shape.cross, SITE_SEED, port)
    seeds = [(host, 0) for host in range(shape.hosts)]
    return {url_of(spec, *page) for page in bfs_depths(spec, seeds)}


def records(path: Path) -> dict[str, bool]:
    """URL -> whether its row records a failure: by its ``fate`` column where the
    table has one, else by status (0 or >= 400) and error. Empty without a database."""
    if not path.exists():
        return {}
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        columns = {row[1] for row in connection.execute("PRAGMA table_info(pages)")}
        if not columns:
            return {}
        if "fate" in columns:
            query = "SELECT url, fate NOT IN (?, ?) FROM pages"
            found = connection.execute(query, NOT_FAILED).fetchall()
        else:
            query = "SELECT url, status = 0 OR status >= 400 OR error > '' FROM pages"
            found = connection.execute(query).fetchall()
    finally:
        connection.close()
    return {url: bool(failed) for url, failed in found}


def measure(
    log: list[dict[str, Any]], database: Path, reach: set[str], bound: int
) -> dict[str, Any]:
    """The row of one scenario: fetched, duplicates, records and fates."""
    answered = Counter(
        f"http://{row['host']}{row['path']}"
        for row in log
        if row["status"] == 200 and not is_robots_path(row["path"])
    )
    fetched = set(answered)
    rows = records(database)
    failed = reach - fetched
    with_fate = {url for url in failed if rows.get(url)}
    duplicates = sum(count - 1 for count in answered.values())
    return {
        "reachable": len(reach),
        "fetched": len(fetched & reach),
        "fetched_of_reachable": f"{len(fetched & reach)} / {len(reach)}",
        "fetched_percent": 100 * len(fetched & reach) / len(reach) if reach else 0.0,
        "fetched_out_of_scope": sorted(fetched - reach)[:SAMPLE],
        "duplicates": duplicates,
        "inflight_bound": bound,
        "duplicates_within_bound": duplicates <= bound,
        "rows": len(rows),
        "rows_of_fetched": f"{len(fetched & set(rows))} / {len(fetched)}",
        "fetched_without_row": len(fetched - set(rows)),
        "fetched_but_row_failed": sum(1 for url in fetched if rows.get(url)),
        "rows_not_fetched": len(set(rows) - fetched),
        "failed": len(failed),
        "failed_with_fate": len(with_fate),
        "failed_without_fate_sample": sorted(failed - with_fate)[:SAMPLE],
        "requests": sum(1 for row in log if not is_robots_path(row["path"])),
        "requests_by_status": _by_status(log),
    }


def _by_status(log: list[dict[str, Any]]) -> dict[str, int]:
    """Page and robots.txt requests by the status the site logged (None: no answer)."""
    counts = Counter(
        f"{'robots' if is_robots_path(row['path']) else 'page'} {row['status']}"
        for row in log
    )
    return dict(sorted(counts.items()))
