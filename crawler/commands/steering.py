"""``scrapy frontier status|seed|pause|resume|reset``: watch and steer a crawl (``set``
is ``crawler.commands.runtimesettings``'s, ``nodes`` and ``drain``
``crawler.commands.nodes``').

Each subcommand takes the crawl's Redis client and keys, the parsed options and the
output stream, and returns the exit status. ``bind_arguments`` puts on the options
what the subcommand needs besides them: ``words`` (the words after its name) and
``settings`` (the project's, with ``-s``). What the operator must fix raises
``ControlError``, which ``scrapy frontier`` prints as one line before exiting with 1.
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING

from scrapy.exceptions import UsageError

from crawler.crawlstate import controls
from crawler.crawlstate.readers import (
    check_deletable,
    crawl_key_count,
    delete_crawl,
    live_nodes,
)
from crawler.crawlstate.status import read_status
from crawler.policy.scope import parse_seed
from crawler.policy.sharding import check_shards
from crawler.policy.typedsettings import get_int
from crawler.reports.status import render_status

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Iterator, Sequence

    import redis
    from scrapy.settings import BaseSettings

    from crawler.crawlstate.keys import CrawlKeys

# ``set``'s one-word form: KEY=VALUE, KEY a setting's name.
ONE_WORD_SETTING = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
# Seeds pushed by one RPUSH.
# Seeds a RPUSH carries: one round trip for many (issue 27: 100M seeds).
SEED_BATCH = 10_000
HEARTBEAT = "within one heartbeat (FRONTIER_MAINTENANCE_INTERVAL)"


class ControlError(RuntimeError):
    """What the operator must fix, said in one line."""


def add_control_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--file", metavar="PATH", help="seed: URLs from PATH, one a line (-: stdin)"
    )
    parser.add_argument(
        "--unset", action="store_true", help="set: drop KEY's run-time value"
    )
    parser.add_argument(
        "--node",
        metavar="NODE",
        help="set: the run-time value of node NODE only (it wins over the crawl's)",
    )
    parser.add_argument(
        "--json", action="store_true", help="nodes: the node table as JSON"
    )
    parser.add_argument(
        "--yes", action="store_true", help="reset: delete without asking"
    )
    parser.add_argument(
        "--force", action="store_true", help="reset: even while nodes are alive"
    )


def bind_arguments(
    opts: argparse.Namespace,
    name: str,
    words: Sequence[str],
    settings: BaseSettings,
) -> None:
    """Check the words after subcommand *name* (raises ``UsageError``) and put
    them, with *settings*, on *opts*. Only ``seed``, ``set`` and ``drain`` take
    words."""
    if opts.node is not None and name != "set":
        raise UsageError(f"--node is for set only, not {name}")
    fewest: int = 0
    most: int | None = 0
    if name == "seed":
        fewest, most = (0 if opts.file else 1), None
    elif name == "set":
        fewest = most = set_word_count(words, unset=opts.unset)
    elif name == "drain":
        fewest = most = 1
    if len(words) < fewest or (most is not None and len(words) > most):
        usage = {
            "set": "set [SPIDER] [--node NODE] KEY VALUE | KEY=VALUE | KEY --unset",
            "seed": "seed [SPIDER] URL... | seed [SPIDER] --file PATH",
            "drain": "drain [SPIDER] NODE",
        }
        raise UsageError(
            f"usage: scrapy frontier {usage.get(name, name + ' [SPIDER]')}; got "
            f"{[name, *words]!r}"
        )
    opts.words = list(words)
    opts.settings = settings


def set_word_count(words: Sequence[str], *, unset: bool) -> int:
    """How many words ``set`` takes after the spider's name: 1 for ``KEY --unset``
    and ``KEY=VALUE``, else 2 (``KEY VALUE``)."""
    return 1 if unset or (words and ONE_WORD_SETTING.match(words[-1])) else 2


# --- subcommands ---------------------------------------------------------------------


def status(
    client: redis.Redis, keys: CrawlKeys, opts: argparse.Namespace, out: IO[str]
) -> int:
    """The crawl's state (finished, running, paused, stopped), its nodes, queues by
    depth, hosts ready and waiting, shards without an owner, and its totals by
    fate; 1 if there is no such crawl."""
    try:
        shards = check_shards(get_int(opts.settings, "FRONTIER_SHARDS"))
    except ValueError as exc:
        raise ControlError(str(exc)) from None
    report = read_status(client, keys, shards)
    out.write(render_status(report, now=time.time()))
    return 0 if report.exists else 1


def seed(
    client: redis.Redis, keys: CrawlKeys, opts: argparse.Namespace, out: IO[str]
) -> int:
    """Push seed URLs for the crawl's nodes; 1 if none was pushed."""
    pushed = skipped = 0
    batch: list[str] = []
    for where, raw in _seed_lines(opts.words, opts.file):
        try:
            url = _seed_of(raw)
        except ValueError as exc:
            print(f"scrapy frontier: {where}: {exc}; skipped", file=sys.stderr)
            skipped += 1
            continue
        if url is not None:
            batch.append(url)
        if len(batch) >= SEED_BATCH:
            pushed += _push(client, keys, batch)
    pushed += _push(client, keys, batch)
    out.write(
        f"Pushed {pushed} seeds to {keys.seeds!r}, skipped {skipped}: running nodes "
        f"take them {HEARTBEAT}, a crawl started later at its start\n"
    )
    return 0 if pushed else 1


def pause(
    client: redis.Redis, keys: CrawlKeys, opts: argparse.Namespace, out: IO[str]
) -> int:
    """Stop every node handing out requests (in-flight ones finish)."""
    controls.pause(client, keys)
    out.write(f"Crawl {keys.prefix!r} paused: nodes stop fetching {HEARTBEAT}\n")
    return 0


def resume(
    client: redis.Redis, keys: CrawlKeys, opts: argparse.Namespace, out: IO[str]
) -> int:
    """Let the nodes of a paused crawl fetch again."""
    if controls.resume(client, keys):
        out.write(f"Crawl {keys.prefix!r} resumed: nodes fetch again {HEARTBEAT}\n")
    else:
        out.write(f"Crawl {keys.prefix!r} was not paused\n")
    return 0


def reset(
    client: redis.Redis, keys: CrawlKeys, opts: argparse.Namespace, out: IO[str]
) -> int:
    """Delete every key of the crawl, after asking (unless --yes); refused while a
    node is alive (unless --force)."""
    try:
        check_deletable(keys)
    except ValueError as exc:
        raise ControlError(str(exc)) from None
    alive = live_nodes(client, keys)
    if alive and not opts.force:
        raise ControlError(
            f"{len(alive)} node(s) of crawl {keys.prefix!r} alive ({alive[0]!r}...): "
            "stop them first, or pass --force"
        )
    count = crawl_key_count(client, keys)
    if not count:
        out.write(f"Crawl {keys.prefix!r} has no keys: nothing to delete\n")
        return 0
    if not opts.yes:
        out.write(f"Delete crawl {keys.prefix!r} ({count} keys)? [y/N] ")
        out.flush()
        if sys.stdin.readline().strip().lower() not in {"y", "yes"}:
            raise ControlError("reset not confirmed: nothing deleted")
    out.write(f"Deleted {delete_crawl(client, keys)} keys of crawl {keys.prefix!r}\n")
    return 0


CONTROL_SUBCOMMANDS: dict[
    str, Callable[[redis.Redis, CrawlKeys, argparse.Namespace, IO[str]], int]
] = {
    "status": status,
    "seed": seed,
    "pause": pause,
    "resume": resume,
    "reset": reset,
}


# --- helpers -------------------------------------------------------------------------


def _seed_lines(words: Sequence[str], path: str | None) -> Iterator[tuple[str, bytes]]:
    """(where, line) of each seed: the arguments, then the lines of *path*."""
    for number, word in enumerate(words, start=1):
        yield f"argument {number}", word.encode("utf-8", "surrogateescape")
    if path is None:
        return
    try:
        stream = sys.stdin.buffer if path == "-" else Path(path).open("rb")  # noqa: SIM115 (closed below unless stdin)
    except OSError as exc:
        raise ControlError(f"cannot read seeds file {path}: {exc.strerror}") from None
    name = "stdin" if path == "-" else path
    try:
        for number, line in enumerate(stream, start=1):
            yield f"{name} line {number}", line.rstrip(b"\r\n")
    except OSError as exc:
        raise ControlError(f"cannot read seeds {name}: {exc.strerror}") from None
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()


def _seed_of(raw: bytes) -> str | None:
    """The seed URL on line *raw*; None for a blank line or a comment. Raises
    ``ValueError`` saying what is wrong otherwise."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{raw!r} is not UTF-8") from None
    return parse_seed(text)


def _push(client: redis.Redis, keys: CrawlKeys, batch: list[str]) -> int:
    """RPUSH *batch* (then empty it); how many were pushed."""
    if not batch:
        return 0
    client.rpush(keys.seeds, *batch)
    pushed = len(batch)
    batch.clear()
    return pushed
