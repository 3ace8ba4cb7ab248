"""The real-sites benchmark's arithmetic: one run's figures, medians over rounds, the
table. Pure: runs in, numbers and text out.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bench import report

if TYPE_CHECKING:
    from collections.abc import Sequence

    from bench.accesslog import Coverage, Fetched

# (key in a run, header, format) of each figure summarised over rounds.
FIGURES: tuple[tuple[str, str, str], ...] = (
    ("pages_per_second", "responses/s", "{:.1f}"),
    ("cpu_ms_per_response", "CPU ms/response", "{:.2f}"),
    ("peak_rss_mb", "peak RSS MB", "{:.0f}"),
    ("responses", "responses", "{:.0f}"),
    ("html_pages", "HTML pages", "{:.0f}"),
    ("non_html", "non-HTML", "{:.0f}"),
    ("missing", "missing vs wget", "{:.0f}"),
    ("extra", "extra vs wget", "{:.0f}"),
)
RATIO_OF = ("frontier", "frontier+pipelines")
FIRST_MISSING = 5


@dataclass(frozen=True, slots=True)
class Spread:
    """Median, least and greatest of a figure over rounds."""

    median: float
    low: float
    high: float


def run_figures(
    fetched: Fetched, wall_seconds: float, cpu_seconds: float, peak_rss_bytes: int
) -> dict[str, Any]:
    """One crawl's figures: responses/s over the span of its responses in the
    access logs (first to last), CPU ms a response, peak RSS in MB."""
    responses, seconds = fetched.responses, fetched.seconds
    return {
        "responses": responses,
        "html_pages": len(fetched.html_pages),
        "non_html": fetched.non_html,
        "statuses": fetched.statuses,
        "errors": len(fetched.errors),
        "first_errors": list(fetched.errors[:FIRST_MISSING]),
        "bytes_sent": fetched.bytes_sent,
        "seconds": seconds,
        "wall_seconds": wall_seconds,
        "pages_per_second": responses / seconds if seconds > 0 else None,
        "cpu_seconds": cpu_seconds,
        "cpu_ms_per_response": 1000 * cpu_seconds / responses if responses else None,
        "peak_rss_mb": peak_rss_bytes / 2**20,
    }


def coverage_figures(cover: Coverage | None) -> dict[str, Any]:
    """Missing and extra counts against wget's set, with the first few missing."""
    if cover is None:
        return {"missing": None, "extra": None, "first_missing": [], "first_extra": []}
    return {
        "missing": len(cover.missing),
        "extra": len(cover.extra),
        "first_missing": list(cover.missing[:FIRST_MISSING]),
        "first_extra": list(cover.extra[:FIRST_MISSING]),
    }


def spread(values: Sequence[float | None]) -> Spread | None:
    """The spread of the known *values*; None when none is known."""
    known = [value for value in values if value is not None]
    if not known:
        return None
    return Spread(statistics.median(known), min(known), max(known))


def summarize(runs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row a crawler (in order of first appearance): each figure's spread over
    its rounds, and for ``RATIO_OF`` the ratio of median responses/s to plain's."""
    rows = []
    for crawler in dict.fromkeys(run["crawler"] for run in runs):
        mine = [run for run in runs if run["crawler"] == crawler]
        row: dict[str, Any] = {"crawler": crawler, "rounds": len(mine)}
        for key, _, _ in FIGURES:
            row[key] = spread([run[key] for run in mine])
        rows.append(row)
    plain = next((row for row in rows if row["crawler"] == "plain"), None)
    for row in rows:
        row["ratio_to_plain"] = (
            _ratio(row, plain) if row["crawler"] in RATIO_OF else None
        )
    return rows


def _ratio(row: dict[str, Any], plain: dict[str, Any] | None) -> float | None:
    if plain is None or row["pages_per_second"] is None:
        return None
    base = plain["pages_per_second"]
    if base is None or base.median == 0:
        return None
    return float(row["pages_per_second"].median / base.median)


def summary_table(rows: Sequence[dict[str, Any]]) -> str:
    """A Markdown table: median (min..max) of each figure, and x plain."""
    columns = [("crawler", "crawler", "{}"), ("rounds", "rounds", "{:d}")]
    columns += [(header, key, "{}") for key, header, _ in FIGURES]
    columns.append(("x plain", "ratio_to_plain", "{}"))
    formats = {key: fmt for key, _, fmt in FIGURES}
    cells = []
    for row in rows:
        cell = {"crawler": row["crawler"], "rounds": row["rounds"]}
        for key, fmt in formats.items():
            cell[key] = _spread_text(row[key], fmt)
        ratio = row["ratio_to_plain"]
        cell["ratio_to_plain"] = None if ratio is None else f"{ratio:.2f}"
        cells.append(cell)
    return report.table(cells, columns)


def _spread_text(value: Spread | None, fmt: str) -> str | None:
    if value is None:
        return None
    median = fmt.format(value.median)
    if value.low == value.high:
        return median
    return f"{median} ({fmt.format(value.low)}..{fmt.format(value.high)})"


def as_json(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """*rows* with each spread as a {median, min, max} dict."""
    return [
        {
            key: (
                {"median": value.median, "min": value.low, "max": value.high}
                if isinstance(value, Spread)
                else value
            )
            for key, value in row.items()
        }
        for row in rows
    ]
