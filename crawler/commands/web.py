"""``scrapy frontier web [SPIDER] [--host H] [--port P] [--control [--token T]]``:
the crawl's live dashboard (``crawler.dashboard``), served until Ctrl-C.

Read-only by default. With ``--control`` the page gets pause and resume buttons,
which POST with a token: ``--token``, else one generated and printed with the URL
(in the URL's fragment, which browsers never send to a server).
"""

from __future__ import annotations

import secrets
import sys
from typing import IO, TYPE_CHECKING

from crawler.commands.steering import ControlError
from crawler.dashboard.server import Dashboard, DashboardConfig, DashboardServer
from crawler.policy.sharding import check_shards
from crawler.policy.typedsettings import get_float, get_int

if TYPE_CHECKING:
    import argparse

    import redis

    from crawler.crawlstate.keys import CrawlKeys

# Bytes of randomness in a generated token.
TOKEN_BYTES = 18


def add_web_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--port", type=int, help="web: the port to serve on (default DASHBOARD_PORT)"
    )
    parser.add_argument(
        "--control",
        action="store_true",
        help="web: show pause and resume buttons (they need the token)",
    )
    parser.add_argument(
        "--token", help="web: the token of --control (default: a new one, printed)"
    )


def web(
    client: redis.Redis, keys: CrawlKeys, opts: argparse.Namespace, out: IO[str]
) -> int:
    """Serve the dashboard of the crawl until interrupted; 0 then."""
    where = address(opts)
    board = dashboard(client, keys, opts)
    try:
        server = DashboardServer(where, board)
    except OSError as exc:
        raise ControlError(
            f"cannot serve on {where[0]}:{where[1]} ({exc.strerror or exc}): pass "
            "another --host or --port"
        ) from None
    with server:
        token = server.dashboard.config.token
        url = server.url + (f"#token={token}" if token else "")
        mode = "pause and resume with the token in this URL" if token else "read-only"
        out.write(
            f"Dashboard of crawl {keys.prefix!r} in Redis {opts.redis_shown} at "
            f"{url} ({mode}); Ctrl-C ends\n"
        )
        out.flush()
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            print("scrapy frontier: dashboard stopped", file=sys.stderr)
    return 0


def dashboard(
    client: redis.Redis, keys: CrawlKeys, opts: argparse.Namespace
) -> Dashboard:
    """The dashboard the options and settings describe; raises ``ControlError``."""
    settings = opts.settings
    try:
        shards = check_shards(get_int(settings, "FRONTIER_SHARDS"))
        refresh = get_float(settings, "DASHBOARD_REFRESH", above=0, note="seconds")
    except ValueError as exc:
        raise ControlError(f"Bad setting: {exc}") from None
    if opts.token is not None and not opts.control:
        raise ControlError("--token goes with --control (the page is read-only)")
    if opts.token is not None and len(opts.token) < 8:
        raise ControlError("--token must be at least 8 characters")
    token = None
    if opts.control:
        token = opts.token or secrets.token_urlsafe(TOKEN_BYTES)
    config = DashboardConfig(shards, opts.top, refresh, token, opts.redis_shown)
    return Dashboard(client, keys, config)


def address(opts: argparse.Namespace) -> tuple[str, int]:
    """(host, port) of ``--host``/``--port``, else of the settings."""
    host = opts.host or opts.settings.get("DASHBOARD_HOST")
    try:
        port = (
            opts.port
            if opts.port is not None
            else get_int(opts.settings, "DASHBOARD_PORT")
        )
    except ValueError as exc:
        raise ControlError(f"Bad setting: {exc}") from None
    if not 0 <= port <= 65535:
        raise ControlError(f"the port must be in 0..65535, got {port}")
    return host, port
