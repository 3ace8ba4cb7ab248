"""``scrapy frontier <subcommand> [SPIDER]``: watch and steer a crawl's frontier.

Subcommands live in ``SUBCOMMANDS`` (name -> function): ``hosts``
(``crawler.reports.hosts``), ``status``, ``seed``, ``pause``, ``resume``, ``reset``
(``crawler.commands.steering``), ``set`` (``crawler.commands.runtimesettings``),
``nodes`` and ``drain`` (``crawler.commands.nodes``), ``retry`` and ``web`` (the
live dashboard, ``crawler.commands.web``). The crawl is the one the
spider SPIDER runs (``crawler.commands.crawltarget``: ``FRONTIER_KEY_PREFIX``, else
the spider's name; without SPIDER, the project's only spider), or ``--prefix``, in
the Redis its settings name; with none named, the Redis of that crawl if it runs in
this directory (registered in ``FRONTIER_RUNNING_DIR``), else the private Redis of
``FRONTIER_EMBEDDED_REDIS_DIR`` that ``scrapy crawl`` used (attaching to it while a
crawl runs, starting it from its data otherwise). ``status`` says first which crawl
it reads, in which Redis; ``retry`` and ``web`` say it in their one line. ``status`` adds a Revisits section
when ``RECORDS_DATABASE_URL`` names a database that holds a URL library.
"""

from __future__ import annotations

import contextlib
import sys
import time
from typing import IO, TYPE_CHECKING

import redis
from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from crawler.commands.crawltarget import (
    CrawlNotFoundError,
    CrawlTarget,
    crawl_target,
    spider_names,
    split_spider,
)
from crawler.commands.nodes import drain, nodes
from crawler.commands.retry import add_retry_options, retry
from crawler.commands.runtimesettings import set_setting
from crawler.commands.steering import (
    CONTROL_SUBCOMMANDS,
    ControlError,
    add_control_options,
    bind_arguments,
    set_word_count,
)
from crawler.commands.steering import status as crawl_status
from crawler.commands.web import add_web_options, web
from crawler.context.database import RecordsDatabaseError, shown
from crawler.crawlstate.connection import (
    CrawlRedis,
    RedisUnreachableError,
    check_reachable,
    masked,
)
from crawler.crawlstate.embedded import EmbeddedRedisError
from crawler.reports.hosts import add_hosts_options, hosts
from crawler.reports.status import render_revisits
from crawler.revisit.duestatus import read_due_status

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Iterator

    from scrapy.settings import BaseSettings

    from crawler.crawlstate.keys import CrawlKeys

# What a command that talks to the crawl's Redis reports in one line, exit status 1.
REDIS_COMMAND_ERRORS = (
    CrawlNotFoundError,
    RedisUnreachableError,
    EmbeddedRedisError,
    redis.RedisError,
)
# Words each subcommand takes after the spider's name (None: any number).
_WORDS: dict[str, int | None] = {"seed": None, "set": 2, "drain": 1}


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False
    default_settings = {"LOG_ENABLED": False}  # noqa: RUF012 (ScrapyCommand's type)

    def syntax(self) -> str:
        return f"{{{'|'.join(SUBCOMMANDS)}}} [SPIDER] [options]"

    def short_desc(self) -> str:
        return f"Watch and steer a crawl's frontier in Redis ({', '.join(SUBCOMMANDS)})"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "--prefix",
            help="the crawl's key prefix (default: the SPIDER's FRONTIER_KEY_PREFIX, "
            "else its name)",
        )
        add_hosts_options(parser)
        add_control_options(parser)
        add_retry_options(parser)
        add_web_options(parser)

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        if not args or args[0] not in SUBCOMMANDS:
            raise UsageError(
                f"give one subcommand of {', '.join(SUBCOMMANDS)}, got {args!r}"
            )
        if opts.top < 1:
            raise UsageError(f"--top must be >= 1, got {opts.top}")
        try:
            target = self._target(args[0], args[1:], opts)
            prefix = target.keys.prefix
            with connected(target.settings, prefix) as (client, server):
                opts.redis_shown = redis_shown(server)
                if args[0] == "status":
                    print(f"Crawl {prefix!r} in Redis {opts.redis_shown}", flush=True)
                subcommand = SUBCOMMANDS[args[0]]
                self.exitcode = subcommand(client, target.keys, opts, sys.stdout)
        except (*REDIS_COMMAND_ERRORS, ControlError) as exc:
            print(f"scrapy frontier: {exc}", file=sys.stderr)
            self.exitcode = 1

    def _target(
        self, name: str, words: list[str], opts: argparse.Namespace
    ) -> CrawlTarget:
        """The crawl meant, with the subcommand's words bound to *opts*."""
        assert self.settings is not None
        expected = _WORDS.get(name, 0)
        if name == "set":
            expected = set_word_count(words, unset=opts.unset)
        names = [] if opts.prefix else spider_names(self.settings)
        spider, words = split_spider(words, names, expected=expected)
        if spider is not None and opts.prefix:
            raise UsageError(f"give SPIDER or --prefix, not both; got {spider!r}")
        target = crawl_target(self.settings, spider, opts.prefix)
        bind_arguments(opts, name, words, target.settings)
        return target


def status(
    client: redis.Redis, keys: CrawlKeys, opts: argparse.Namespace, out: IO[str]
) -> int:
    """The crawl's state (``steering.status``), then, for a crawl that exists, the
    Revisits section of its URL library if it has one; 1 if there is no such crawl."""
    code = crawl_status(client, keys, opts, out)
    if code == 0:
        url = opts.settings.get("RECORDS_DATABASE_URL") or ""
        out.write(revisits_section(url, now=time.time()))
    return code


def revisits_section(url: str, *, now: float) -> str:
    """The Revisits section of the URL library in the database *url*: empty when
    there is none (revisits off: no table), one line when it cannot be read (the
    crawl's own state is shown all the same)."""
    try:
        due = read_due_status(url, now=now)
    except RecordsDatabaseError as exc:
        return f"Revisits: not shown ({exc})\n"
    return "" if due is None else render_revisits(due, where=shown(url))


# "status" keeps its place among the subcommands (their order is the usage's).
SUBCOMMANDS: dict[
    str, Callable[[redis.Redis, CrawlKeys, argparse.Namespace, IO[str]], int]
] = {
    "hosts": hosts,
    **CONTROL_SUBCOMMANDS,
    "status": status,
    "set": set_setting,
    "nodes": nodes,
    "drain": drain,
    "retry": retry,
    "web": web,
}


def redis_shown(server: CrawlRedis) -> str:
    """``redis://127.0.0.1:6379/0 (named by the settings)``: the Redis a command
    reads, password masked, and why that one. ``status`` says it first, ``retry``
    and ``web`` in their one line."""
    where = f" ({server.source})" if server.source else ""
    return f"{masked(server.url)}{where}"


@contextlib.contextmanager
def connected(
    settings: BaseSettings, prefix: str
) -> Iterator[tuple[redis.Redis, CrawlRedis]]:
    """A client of the crawl's Redis, and the server (see
    ``crawler.crawlstate.connection``): the server the settings name, else that of
    the crawl of *prefix* running in this directory, else the private server a
    crawl runs or left data of."""
    server = CrawlRedis.from_settings(settings, join=True, prefix=prefix)
    with contextlib.ExitStack() as stack:
        stack.callback(server.close)
        # Host names are kept byte for byte, even those that are not UTF-8.
        client = server.sync_client(encoding_errors="surrogateescape")
        stack.callback(client.close)
        check_reachable(client, server.url)
        yield client, server
