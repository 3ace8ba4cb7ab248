"""A test site full of spider traps, served on loopback (issue 26).

Run as ``python -m tests.trapsite --port P --log FILE [--hosts N]``: host i of
tests/traproutes.py's KINDS (calendar, sessions, paths, facets, soft404, mirrors,
plain) on 127.0.0.<2+i>, all on one port, each request logged as a JSON line with
its arrival time, as tests/site.py logs them. The one line on stdout gives the port
and the seeds. ``running_trap_site()`` runs it for a test.

What a URL is (real, trap, dead) and which real pages a crawl of some depth should
find are pure functions, importable from here: ``classify``, ``real_pages``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import random
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from tests.site import (
    LISTEN_BACKLOG,
    MAX_HEAD_BYTES,
    NOT_ALLOWED,
    Request,
    Response,
    bind_all,
    encode,
    host_address,
    parse_head,
    read_log,
)
from tests.traplinks import real_pages
from tests.trappages import serve
from tests.traproutes import KINDS, classify

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

__all__ = ["KINDS", "classify", "real_pages", "running_trap_site", "seeds"]

ROOT = Path(__file__).resolve().parent.parent
# Seconds a stopped site may take to exit before it is killed.
STOP_TIMEOUT = 10.0
HTML = "text/html; charset=utf-8"


def seeds(port: int, hosts: int = len(KINDS)) -> list[str]:
    """Each host's root URL, host 0 first."""
    return [f"http://{host_address(i)}:{port}/" for i in range(hosts)]


class TrapSite:
    """Answers every host's requests and logs each one."""

    def __init__(self, port: int, log: IO[str] | None) -> None:
        self.port = port
        self.log = log
        self.rng = random.Random()  # session ids and adverts: fresh on every run

    def respond(self, host_index: int, request: Request) -> Response:
        """GET and HEAD only, as tests/site.py."""
        if request.method not in ("GET", "HEAD"):
            return NOT_ALLOWED
        served = serve(host_index, request.target, time.time(), self.rng)
        return Response(served.status, served.html.encode("utf-8"), HTML)

    def record(self, t: float, host_index: int, request: Request, status: int) -> None:
        """One JSON line per request, flushed so a test can read it at once."""
        if self.log is None:
            return
        entry = {
            "t": t,
            "host": f"{host_address(host_index)}:{self.port}",
            "path": request.target,
            "method": request.method,
            "status": status,
            "ua": request.headers.get("user-agent"),
            "referer": request.headers.get("referer"),
        }
        self.log.write(json.dumps(entry) + "\n")
        self.log.flush()

    async def serve_connection(
        self,
        host_index: int,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        """Answer requests on one connection until the client closes it."""
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                t = time.time()
                request = parse_head(head)
                if request is None:
                    return
                response = self.respond(host_index, request)
                keep_alive = (
                    request.keep_alive and "content-length" not in request.headers
                )
                writer.write(encode(response, request, keep_alive))
                self.record(t, host_index, request, response.status)
                await writer.drain()
                if not keep_alive:
                    return
        except (
            ConnectionError,
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
        ):
            pass
        finally:
            writer.close()


async def run(hosts: int, port: int, log: IO[str] | None) -> None:
    """Bind every host on one port, announce it on stdout, serve until signalled."""
    sockets = bind_all([host_address(i) for i in range(hosts)], port)
    port = sockets[0].getsockname()[1]
    site = TrapSite(port, log)
    servers = [
        await asyncio.start_server(
            functools.partial(site.serve_connection, i),
            sock=sock,
            limit=MAX_HEAD_BYTES,
            backlog=LISTEN_BACKLOG,
        )
        for i, sock in enumerate(sockets)
    ]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    line = {"port": port, "kinds": KINDS[:hosts], "seeds": seeds(port, hosts)}
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()
    await stop.wait()
    for server in servers:
        server.close()


@dataclass(frozen=True)
class RunningTrapSite:
    """A started trap site: its port, seeds (host 0 first) and request log."""

    port: int
    seeds: list[str]
    log_path: Path

    def log(self) -> list[dict[str, Any]]:
        return read_log(self.log_path)

    def host(self, index: int) -> str:
        """The ``host`` field of host *index* in the log (address:port)."""
        return f"{host_address(index)}:{self.port}"

    def url(self, index: int, path_and_query: str) -> str:
        return f"http://{self.host(index)}{path_and_query}"


@contextlib.contextmanager
def running_trap_site(hosts: int = len(KINDS)) -> Iterator[RunningTrapSite]:
    """Serve the first *hosts* of KINDS on 127.0.0.2... until the block ends."""
    with tempfile.TemporaryDirectory(prefix="trapsite-") as tmp:
        log_path = Path(tmp) / "requests.jsonl"
        command = [
            sys.executable, "-m", "tests.trapsite",
            "--hosts", str(hosts), "--log", str(log_path),
        ]  # fmt: skip
        process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
        try:
            assert process.stdout is not None
            info = json.loads(process.stdout.readline())
            yield RunningTrapSite(info["port"], info["seeds"], log_path)
        finally:
            _stop(process)


def _stop(process: subprocess.Popen[Any]) -> None:
    """Terminate *process*, killing it if it outlives STOP_TIMEOUT (bounded)."""
    process.terminate()
    try:
        process.wait(STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(STOP_TIMEOUT)
    if process.stdout is not None:
        process.stdout.close()


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=0, help="0: any free port")
    parser.add_argument("--log", default=None, help="JSON lines, one per request")
    parser.add_argument(
        "--hosts", type=int, default=len(KINDS), help=f"the first N of {KINDS}"
    )
    args = parser.parse_args(argv)
    if not 1 <= args.hosts <= len(KINDS):
        parser.error(f"--hosts must be between 1 and {len(KINDS)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point for ``python -m tests.trapsite``."""
    args = parse_args(argv)
    with contextlib.ExitStack() as stack:
        log = (
            stack.enter_context(Path(args.log).open("a", encoding="utf-8"))
            if args.log
            else None
        )
        asyncio.run(run(args.hosts, args.port, log))
    return 0


if __name__ == "__main__":
    sys.exit(main())
