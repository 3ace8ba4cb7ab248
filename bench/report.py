"""The benchmark's outputs: one row per crawler, a text table, and results.json."""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

# (header, key in a row, format)
COLUMNS: list[tuple[str, str, str]] = [
    ("crawler", "crawler", "{}"),
    ("pages", "pages", "{:d}"),
    ("s", "seconds", "{:.1f}"),
    ("wall s", "wall_seconds", "{:.1f}"),
    ("pages/s", "pages_per_second", "{:.0f}"),
    ("x plain", "ratio_to_plain", "{:.2f}"),
    ("CPU s", "cpu_seconds", "{:.1f}"),
    ("CPU ms/page", "cpu_ms_per_page", "{:.2f}"),
    ("peak RSS MB", "peak_rss_mb", "{:.0f}"),
    ("Redis CPU s", "redis_cpu_seconds", "{:.1f}"),
    ("Redis B/seen URL (in crawl)", "redis_bytes_per_seen_url", "{:.1f}"),
    ("Redis B/queued req", "redis_bytes_per_queued_request", "{:.0f}"),
    ("Redis trips/page", "redis_round_trips_per_page", "{:.2f}"),
]

# The seen-URL filter at scale (bench.queue_cost over many hosts), one row a scheduler.
DEDUP_COLUMNS: list[tuple[str, str, str]] = [
    ("scheduler", "scheduler", "{}"),
    ("URLs", "seen_urls", "{:d}"),
    ("hosts", "hosts", "{:d}"),
    ("seen-filter bytes", "dedup_growth_bytes", "{:d}"),
    ("B/seen URL", "dedup_bytes_per_seen_url", "{:.2f}"),
    ("fixed bytes", "dedup_fixed_bytes", "{:d}"),
    ("fixed B/URL", "dedup_fixed_bytes_per_seen_url", "{:.2f}"),
]


def median_runs(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per crawler, the run with the median pages/s (its figures stay consistent)."""
    rows = []
    for crawler in dict.fromkeys(run["crawler"] for run in runs):
        mine = sorted(
            (r for r in runs if r["crawler"] == crawler),
            key=lambda r: r["pages_per_second"],
        )
        rows.append(dict(mine[(len(mine) - 1) // 2]))
    plain = next((r for r in rows if r["crawler"] == "plain"), None)
    for row in rows:
        row["ratio_to_plain"] = (
            row["pages_per_second"] / plain["pages_per_second"]
            if plain and plain["pages_per_second"]
            else None
        )
    return rows


def add_queue_costs(rows: list[dict[str, Any]], costs: dict[str, Any]) -> None:
    for row in rows:
        cost = costs.get(row["crawler"])
        row["redis_bytes_per_queued_request"] = (
            cost["bytes_per_request_queue"] if cost else None
        )


def table(
    rows: list[dict[str, Any]], columns: list[tuple[str, str, str]] = COLUMNS
) -> str:
    """A fixed-width text table (a Markdown table as well: cells split by ``|``)."""
    cells = [[header for header, _, _ in columns]]
    cells += [[_cell(row.get(key), fmt) for _, key, fmt in columns] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    lines = [
        "| " + " | ".join(c.rjust(w) for c, w in zip(line, widths, strict=True)) + " |"
        for line in cells
    ]
    rule = "|" + "|".join("-" * (w + 1) + ":" for w in widths) + "|"
    return "\n".join([lines[0], rule, *lines[1:]])


def dedup_table(costs: dict[str, Any]) -> str:
    """The seen-URL filter at scale: growth per URL held, and the fixed part."""
    return table(list(costs.values()), DEDUP_COLUMNS)


def dedup_notes(costs: dict[str, Any]) -> list[str]:
    """One line a scheduler: where its seen-filter bytes are, and the time taken."""
    lines = []
    for name, cost in costs.items():
        seen, urls = cost["seen_filter"], cost["seen_urls"] or 1
        line = (
            f"{name}: {cost['requests']} requests over {cost['hosts']} hosts enqueued "
            f"in {cost['enqueue_seconds']:.1f} s, {cost['seen_urls']} URLs in the "
            f"seen filter"
        )
        if "bitmaps_by_filter" in seen:
            line += (
                f" (Bloom: capacity {cost['dedup_capacity']}, error rate "
                f"{cost['dedup_error_rate']:g})"
            )
            first = seen["bitmaps_by_filter"].get("0", {"keys": 0, "bytes": 0})
            later = seen["bitmap_bytes"] - first["bytes"]
            line += (
                f"; bitmaps {seen['bitmap_bytes']} B: filter 0 {first['bytes']} B "
                f"in {first['keys']} shards ({first['bytes'] / urls:.2f} B/URL), "
                f"later filters {later} B ({later / urls:.2f} B/URL) in "
                f"{seen['shards_past_first_filter']} of {seen['shards']} shards; "
                f"layout hashes {cost['seen_filter_at_open']['layout_bytes']} B at "
                f"open, {seen['layout_bytes']} B at the end"
            )
        lines.append(line)
    return lines


def _cell(value: Any, fmt: str) -> str:
    if value is None:
        return "n/a"
    return fmt.format(value)


def summary_of_runs(runs: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Min, median and max pages/s of each crawler over its runs."""
    result = {}
    for crawler in dict.fromkeys(run["crawler"] for run in runs):
        rates = [r["pages_per_second"] for r in runs if r["crawler"] == crawler]
        result[crawler] = {
            "runs": len(rates),
            "min": min(rates),
            "median": statistics.median(rates),
            "max": max(rates),
        }
    return result


def write_json(path: Path, results: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2, default=str) + "\n", "utf-8")


def save_results(
    module: str, args: argparse.Namespace, results: dict[str, Any], **extra: Any
) -> Path:
    """Write *results* of ``python -m bench.<module>`` to ``<args.out>/<module>.json``,
    with the command as run, its arguments and *extra* (tables, rows); say where."""
    results |= {
        "command": " ".join([f".venv/bin/python -m bench.{module}", *sys.argv[1:]]),
        "arguments": {
            k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()
        },
        **extra,
    }
    path = args.out / f"{module}.json"
    write_json(path, results)
    print(f"\nWrote {path}")
    return path
