"""``scrapy pages``: query the page-record database a crawl wrote.

Rows of ``RECORDS_DATABASE_URL`` (``-s`` overrides it), filtered by ``--host``
(exact), ``--status`` (exact; 0 lists the URLs that failed without an HTTP answer),
``--failed`` (every URL that failed for good, HTTP errors included), ``--fate``
(one fate of ``crawler.policy.fates``), ``--title`` (a case-insensitive
substring) and ``--signal KEY=VALUE`` (served with that content signal, from
robots.txt or a header; ``--signal KEY``: with any value; repeated: all of them),
sorted by URL (``--order importance``: the most important first, as
``FRONTIER_ORDER = importance`` handed them out; ``inlinks``, ``depth``,
``fetched``), at most ``--limit``. Rows are those of one crawl: by
default the crawl the command means (``crawler.commands.crawltarget``: the project's
only spider, or ``FRONTIER_KEY_PREFIX``) and rows written before rows named their
crawl; ``--crawl NAME`` (a key prefix) only that crawl's; ``--all-crawls`` every
row. Standard error says which crawl is shown. ``--format``:
``table`` (default: an aligned summary for a terminal), ``csv`` (a header line, then
every column), ``json`` (one array of objects) or ``jsonl`` (one object a line); a
page's content signals are JSON text in CSV, an object in JSON.
``-o FILE`` writes to a file instead of standard output. The database is opened
read-only: querying never creates one.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from crawler.commands.crawltarget import (
    CrawlNotFoundError,
    crawl_settings,
    crawl_target,
)
from crawler.context.database import shown
from crawler.policy.contentsignals import signals_of_json, signals_text
from crawler.policy.fates import FAILED_FATES, FATES
from crawler.records.database import COLUMNS, RecordsDatabase, RecordsDatabaseError
from crawler.records.query import ORDERS
from crawler.reports.hosts import CELL_WIDTH, cell

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Iterable

# The columns the table shows (every column goes to CSV and JSON).
TABLE_COLUMNS = (
    "url",
    "status",
    "fate",
    "depth",
    "importance",
    "inlinks",
    "length",
    "title",
    "fetched_at",
    "content_signals",
)
_RIGHT_ALIGNED = frozenset({"status", "depth", "importance", "inlinks", "length"})
# Cells wider than the hosts table's: the last column aligns nothing after it.
WIDTHS = {"content_signals": 160}
# Significant digits of an importance in the table (CSV and JSON keep them all).
IMPORTANCE_DIGITS = 4
FORMATS = ("table", "csv", "json", "jsonl")


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False
    default_settings = {"LOG_ENABLED": False}  # noqa: RUF012 (ScrapyCommand's type)

    def syntax(self) -> str:
        return (
            "[--host H] [--status N] [--failed | --fate F] [--title TEXT] "
            "[--signal KEY[=VALUE]]... [--order O] [--format F] [-o FILE]"
        )

    def short_desc(self) -> str:
        return "Query the page records a crawl wrote (RECORDS_DATABASE_URL)"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--host", help="only pages of this host (exact)")
        parser.add_argument(
            "--status", type=int, help="only pages of this status (0: failed)"
        )
        fates = parser.add_mutually_exclusive_group()
        fates.add_argument(
            "--failed",
            action="store_true",
            help="only URLs that failed for good (any fate but fetched, redirected)",
        )
        fates.add_argument("--fate", choices=FATES, help="only URLs of this fate")
        parser.add_argument(
            "--title", help="only pages whose title holds this text (any case)"
        )
        parser.add_argument(
            "--signal",
            action="append",
            default=[],
            metavar="KEY[=VALUE]",
            help="only pages served with this content signal (ai-train=no, "
            "train-ai=n...) from robots.txt or a header; KEY alone: any value; "
            "repeat for pages with all of them",
        )
        crawls = parser.add_mutually_exclusive_group()
        crawls.add_argument(
            "--crawl",
            "--prefix",  # the word `scrapy frontier` uses for a crawl's name
            dest="crawl",
            metavar="NAME",
            help="only rows of this crawl (its key prefix; default: the project's "
            "crawl, with rows of no known crawl)",
        )
        crawls.add_argument(
            "--all-crawls", action="store_true", help="rows of every crawl"
        )
        parser.add_argument("--limit", type=int, help="at most this many rows")
        parser.add_argument(
            "--order",
            choices=tuple(ORDERS),
            default="url",
            help="url (default); importance, inlinks: the highest first (rows "
            "without one last); depth, fetched: the lowest, earliest first",
        )
        parser.add_argument(
            "--format",
            choices=FORMATS,
            default="table",
            help="table (default), csv, json (an array) or jsonl (one object a line)",
        )
        parser.add_argument(
            "-o", "--output", metavar="FILE", help="write to FILE, not stdout"
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        if args:
            raise UsageError(f"scrapy pages takes no arguments, got {args!r}")
        if opts.limit is not None and opts.limit < 0:
            raise UsageError(f"--limit must be >= 0, got {opts.limit}")
        opts.signals = signal_filters(opts.signal)
        # The add-on's default (a database under .crawl/) below the project's.
        url = crawl_settings(self.settings).get("RECORDS_DATABASE_URL") or ""
        try:
            if not url:
                raise RecordsDatabaseError(
                    "RECORDS_DATABASE_URL is empty: pass -s RECORDS_DATABASE_URL=..."
                )
            opts.crawl, opts.unknown_crawl = self._crawl(opts)
            self.exitcode = write_pages(url, opts)
        except (RecordsDatabaseError, OSError) as exc:
            print(f"scrapy pages: {exc}", file=sys.stderr)
            self.exitcode = 1

    def _crawl(self, opts: argparse.Namespace) -> tuple[str | None, bool]:
        """(the crawl whose rows are shown, None: every crawl; whether rows of no
        known crawl are shown too)."""
        assert self.settings is not None
        if opts.all_crawls:
            return None, True
        if opts.crawl:
            return opts.crawl, False
        try:
            return crawl_target(self.settings, None).keys.prefix, True
        except CrawlNotFoundError:  # several spiders: no crawl is "the" crawl
            return None, True


def write_pages(url: str, opts: argparse.Namespace) -> int:
    """Query the database at *url* as *opts* say and write the rows out; say
    which crawl they are of on standard error."""
    database = RecordsDatabase(url).open(create=False)
    print(shown_crawl(opts.crawl, opts.unknown_crawl, url), file=sys.stderr)
    try:
        fates = FAILED_FATES if opts.failed else {opts.fate} if opts.fate else None
        rows = database.query(
            host=opts.host,
            status=opts.status,
            title=opts.title,
            fates=fates,
            signals=opts.signals,
            crawl=opts.crawl,
            unknown_crawl=opts.unknown_crawl,
            limit=opts.limit,
            order=opts.order,
        )
        writer = WRITERS[opts.format]
        if opts.output:
            with Path(opts.output).open("w", encoding="utf-8", newline="") as out:
                writer(rows, out)
        else:
            writer(rows, sys.stdout)
    finally:
        database.close()
    return 0


def signal_filters(given: Iterable[str]) -> tuple[tuple[str, str | None], ...]:
    """``--signal`` values as (key, value or None for any); ``UsageError`` for one
    without a key."""
    filters: list[tuple[str, str | None]] = []
    for text in given:
        key, equals, value = text.partition("=")
        if not key.strip():
            raise UsageError(f"--signal wants KEY or KEY=VALUE, got {text!r}")
        filters.append((key.strip(), value.strip() if equals else None))
    return tuple(filters)


def shown_crawl(crawl: str | None, unknown: bool, url: str) -> str:
    """The line that says whose rows are shown, and from which database."""
    if crawl is None:
        whose = "every crawl"
    else:
        whose = f"crawl {crawl!r}" + (" (and of no known crawl)" if unknown else "")
    return (
        f"scrapy pages: rows of {whose} in {shown(url)}; --crawl NAME or "
        "--all-crawls for others"
    )


def write_table(rows: Iterable[dict[str, Any]], out: IO[str]) -> None:
    """An aligned table of TABLE_COLUMNS (every row is read first, for widths)."""
    lines = [list(TABLE_COLUMNS)]
    lines += [
        [cell(_shown(c, row[c]), WIDTHS.get(c, CELL_WIDTH)) for c in TABLE_COLUMNS]
        for row in rows
    ]
    if len(lines) == 1:
        out.write("No pages match\n")
        return
    widths = [max(len(line[i]) for line in lines) for i in range(len(TABLE_COLUMNS))]
    for line in lines:
        out.write(
            "  ".join(
                text.rjust(width) if column in _RIGHT_ALIGNED else text.ljust(width)
                for column, text, width in zip(TABLE_COLUMNS, line, widths, strict=True)
            ).rstrip()
            + "\n"
        )


def write_csv(rows: Iterable[dict[str, Any]], out: IO[str]) -> None:
    """Every column; an empty field for NULL."""
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)


def write_json(rows: Iterable[dict[str, Any]], out: IO[str]) -> None:
    """One JSON array of objects, one object a line (streamed, never held)."""
    out.write("[")
    for index, row in enumerate(rows):
        text = json.dumps(_decoded(row), ensure_ascii=False)
        out.write(("," if index else "") + "\n" + text)
    out.write("\n]\n")


def write_jsonl(rows: Iterable[dict[str, Any]], out: IO[str]) -> None:
    for row in rows:
        out.write(json.dumps(_decoded(row), ensure_ascii=False) + "\n")


def _decoded(row: dict[str, Any]) -> dict[str, Any]:
    """*row* with its content signals as an object, not JSON text (kept as text if
    the crawler did not write it)."""
    if isinstance(text := row.get("content_signals"), str):
        row["content_signals"] = signals_of_json(text) or text
    return row


def _shown(column: str, value: object) -> str:
    """A table cell: empty for NULL, an importance to IMPORTANCE_DIGITS digits,
    content signals on one line."""
    if value is None:
        return ""
    if column == "importance" and isinstance(value, float):
        return f"{value:.{IMPORTANCE_DIGITS}g}"
    if column == "content_signals" and isinstance(value, str):
        signals = signals_of_json(value)
        return signals_text(signals) if signals else value
    return str(value)


WRITERS: dict[str, Callable[[Iterable[dict[str, Any]], IO[str]], None]] = {
    "table": write_table,
    "csv": write_csv,
    "json": write_json,
    "jsonl": write_jsonl,
}
