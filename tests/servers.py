"""Context managers that run the test site, a Redis server and a PostgreSQL server as
subprocesses."""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import redis as redis_py

from crawler.crawlstate.embedded import (
    EmbeddedRedis,
    _die_with_parent,
    redis_server_binary,
)
from tests.dynamicsite import is_subresource_path, rendered_page
from tests.site import SiteSpec, read_log

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence
    from socketserver import BaseServer

Server = TypeVar("Server", bound="BaseServer")

ROOT = Path(__file__).resolve().parent.parent
# The path of a soft-404 probe (crawler.policy.traps.soft_404_probe_url).
SOFT_404_PROBE = re.compile(r"^/[0-9a-f]+-no-such-page-[0-9a-f]+\.html$")
# Seconds a stopped site may take to exit before it is killed.
STOP_TIMEOUT = 10.0
# Seconds a private PostgreSQL may take to initdb, and then to accept connections.
POSTGRES_START_TIMEOUT = 60.0
# Where Debian's postgresql-<version> packages put their server binaries.
DEBIAN_POSTGRES = Path("/usr/lib/postgresql")


@dataclass(frozen=True)
class RunningSite:
    """A started test site: its spec (with the real port), seeds and request log."""

    spec: SiteSpec
    seeds: list[str]
    log_path: Path

    def log(self) -> list[dict[str, Any]]:
        return read_log(self.log_path)

    def pages(self) -> list[dict[str, Any]]:
        """Logged fetches of pages, in arrival order: robots.txt, soft-404 probes
        (TRAPS_SOFT_404) and the subrequests of rendered pages
        (tests/dynamicsite.py) left out."""
        return [
            r
            for r in self.log()
            if r["path"] != "/robots.txt"
            and not is_subresource_path(r["path"])
            and not SOFT_404_PROBE.search(r["path"])
        ]

    def renders(self, index: int) -> list[int]:
        """Pages of host *index* a browser rendered, once per render, in order (from
        the render marks the pages' scripts ask for; tests/dynamicsite.py)."""
        host = self.host(index)
        found = [rendered_page(r["path"]) for r in self.log() if r["host"] == host]
        return [page for page in found if page is not None]

    def robots_fetches(self) -> dict[str, int]:
        """Fetches of /robots.txt per host (redirect hops not counted)."""
        counts: dict[str, int] = {}
        for row in self.log():
            if row["path"] == "/robots.txt":
                counts[row["host"]] = counts.get(row["host"], 0) + 1
        return counts

    def host(self, index: int) -> str:
        """The ``host`` field of host *index* in the log (address:port)."""
        return f"127.0.0.{2 + index}:{self.spec.port}"

    def gaps_by_host(self) -> dict[str, list[float]]:
        """Seconds between two page fetches in a row of each host, as the site saw them."""
        last: dict[str, float] = {}
        gaps: dict[str, list[float]] = {}
        for row in self.pages():
            if row["host"] in last:
                gaps.setdefault(row["host"], []).append(row["t"] - last[row["host"]])
            last[row["host"]] = row["t"]
        return gaps


@contextlib.contextmanager
def running_site(
    *,
    hosts: int = 4,
    pages: int = 30,
    links: int = 5,
    cross: float = 0.2,
    seed: int = 1,
    latency: float = 0.0,
    robots: Mapping[int, str] | None = None,
    behave: Mapping[int, str] | None = None,
    hostile: bool = False,
    fates: bool = False,
    headers: Mapping[int, Sequence[str]] | None = None,
) -> Iterator[RunningSite]:
    """Serve the test site on 127.0.0.2... until the block ends.

    *robots* maps a host index to its robots.txt, in ``--robots`` syntax
    (``{0: "disallow:/p/1.html;crawl-delay:0.5", 1: "status:503", 2: "hang"}``);
    other hosts answer 404. *behave* maps a host index to how it answers the rest,
    in ``--behave`` syntax (``{0: "delay:1.5", 1: "flaky", 2: "dead",
    3: "retry-after:1"}``); other hosts answer at once. *hostile* makes host 0 serve
    ``tests.site.HOSTILE_INDEX`` and answer 200 to any other path; *fates* makes
    host 0 serve ``tests.site.FATE_PAGES``, linked from its root. *headers* maps a
    host index to headers some of its pages send, in ``--header`` syntax without
    the index (``{0: ["1,2|Content-Usage: train-ai=n", "*|X-Any: 1"]}``).
    """
    with tempfile.TemporaryDirectory(prefix="site-") as tmp:
        log_path = Path(tmp) / "requests.jsonl"
        command = [
            sys.executable, "-m", "tests.site",
            "--hosts", str(hosts), "--pages", str(pages), "--links", str(links),
            "--cross", str(cross), "--seed", str(seed), "--log", str(log_path),
            "--latency", str(latency),
        ]  # fmt: skip
        for index, items in (robots or {}).items():
            command += ["--robots", f"{index}={items}"]
        for index, items in (behave or {}).items():
            command += ["--behave", f"{index}={items}"]
        for index, fields in (headers or {}).items():
            command += [arg for f in fields for arg in ("--header", f"{index}={f}")]
        if hostile:
            command.append("--hostile")
        if fates:
            command.append("--fates")
        process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
        try:
            assert process.stdout is not None
            info = json.loads(process.stdout.readline())
            spec = SiteSpec(hosts, pages, links, cross, seed, info["port"])
            yield RunningSite(spec, info["seeds"], log_path)
        finally:
            stop(process)


def stop(process: subprocess.Popen[Any]) -> None:
    """Terminate *process*, killing it if it outlives STOP_TIMEOUT (bounded)."""
    process.terminate()
    try:
        process.wait(STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(STOP_TIMEOUT)
    if process.stdout is not None:
        process.stdout.close()


@contextlib.contextmanager
def redis_for_tests() -> Iterator[str]:
    """``TEST_REDIS_URL`` when given, else a private redis-server for the session."""
    if url := os.environ.get("TEST_REDIS_URL"):
        yield url
        return
    with tempfile.TemporaryDirectory(prefix="redis-") as tmp:
        server = EmbeddedRedis(Path(tmp), persist=False).start()
        try:
            yield server.url
        finally:
            server.stop()


def wait_for(predicate: Any, timeout: float, interval: float = 0.05) -> bool:
    """Poll *predicate* until it is true or *timeout* seconds pass (bounded)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())


class RestartableRedis:
    """A redis-server with its append-only file in *directory*, on one port for
    its whole life: stopped, then started again from that file."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.port = _free_port()
        self._process: subprocess.Popen[str] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start the server (again) and wait, bounded, until it answers PING."""
        self.directory.mkdir(parents=True, exist_ok=True)
        command = [
            redis_server_binary(), "--port", str(self.port), "--bind", "127.0.0.1",
            "--save", "", "--appendonly", "yes", "--appendfsync", "everysec",
            "--dir", str(self.directory),
        ]  # fmt: skip
        self._process = subprocess.Popen(command, stdout=subprocess.DEVNULL, text=True)
        client = redis_py.Redis.from_url(self.url, socket_connect_timeout=0.2)
        try:
            assert wait_for(lambda: _pings(client), timeout=10)
        finally:
            client.close()

    def stop(self) -> None:
        """SIGTERM: Redis writes its append-only file to disk before it exits."""
        if self._process is not None:
            stop(self._process)
            self._process = None


def _pings(client: redis_py.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis_py.ConnectionError:  # still starting (or loading its file)
        return False


@contextlib.contextmanager
def postgres_for_tests() -> Iterator[str]:
    """``TEST_POSTGRES_URL`` when given, else a private PostgreSQL server for the
    session, so the records tests never depend on a server of the machine's.

    The cluster is made by initdb in a temporary directory (trust auth, no fsync:
    it lives as long as the session) and listens on 127.0.0.1 on a free port, its
    unix socket in that directory. initdb and postgres refuse to run as root, so as
    root (CI) both run as the ``postgres`` user that Debian's package creates.
    """
    if url := os.environ.get("TEST_POSTGRES_URL"):
        yield url
        return
    binaries = postgres_binaries()
    as_user = _unprivileged()
    with tempfile.TemporaryDirectory(prefix="postgres-") as tmp:
        if as_user:
            os.chown(tmp, as_user["user"], as_user["group"])
        data = Path(tmp) / "data"
        command: list[str | Path] = [
            binaries / "initdb", "-D", data, "-U", "postgres", "--auth=trust",
            "--no-locale", "--encoding=UTF8", "--no-sync",
        ]  # fmt: skip
        initdb = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=POSTGRES_START_TIMEOUT,
            check=False,
            **as_user,
        )
        if initdb.returncode != 0:
            raise RuntimeError(f"initdb failed in {tmp}:\n{initdb.stderr}")
        port = _free_port()
        command = [
            binaries / "postgres", "-D", data, "-h", "127.0.0.1", "-p", str(port),
            "-k", tmp, "-c", "fsync=off", "-c", "synchronous_commit=off",
            "-c", "full_page_writes=off",
        ]  # fmt: skip
        log_path = Path(tmp) / "postgres.log"
        with log_path.open("w") as log:
            process = subprocess.Popen(
                command,
                stdout=subprocess.DEVNULL,
                stderr=log,
                preexec_fn=_die_with_parent,  # noqa: PLW1509 (runs before exec only)
                **as_user,
            )
        url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
        try:
            up = wait_for(
                lambda: process.poll() is not None or _accepts(url),
                timeout=POSTGRES_START_TIMEOUT,
            )
            if not up or process.poll() is not None:
                raise RuntimeError(
                    f"postgres did not start on port {port}:\n{log_path.read_text()}"
                )
            yield url
        finally:
            # SIGINT: a fast shutdown, which does not wait for clients to disconnect.
            process.send_signal(signal.SIGINT)
            try:
                process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(STOP_TIMEOUT)


def postgres_binaries() -> Path:
    """The bin directory of the newest PostgreSQL server Debian installed."""
    found = [
        path.parent
        for path in DEBIAN_POSTGRES.glob("*/bin/postgres")
        if (path.parent / "initdb").exists()
    ]
    if not found:
        raise RuntimeError(
            f"no PostgreSQL server in {DEBIAN_POSTGRES}/<version>/bin: the records "
            "tests need one (apt-get install postgresql; .ci/run installs it), or "
            "TEST_POSTGRES_URL set to a database they may create schemas in"
        )
    return max(found, key=lambda bin_dir: _version(bin_dir.parent.name))


def _version(name: str) -> tuple[int, ...]:
    """``"15"`` -> (15,), ``"9.6"`` -> (9, 6); names not a version sort first."""
    try:
        return tuple(int(part) for part in name.split("."))
    except ValueError:
        return ()


def _unprivileged() -> dict[str, Any]:
    """Popen keywords that run a PostgreSQL binary as ``postgres`` when we are root
    (initdb and postgres refuse root), else none."""
    if os.geteuid() != 0:
        return {}
    try:
        user = pwd.getpwnam("postgres")
    except KeyError:
        raise RuntimeError(
            "running as root, and there is no postgres user to run PostgreSQL as "
            "(Debian's postgresql package creates it)"
        ) from None
    return {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}


def _accepts(url: str) -> bool:
    import psycopg  # noqa: PLC0415 (only when PostgreSQL is tested)

    try:
        psycopg.connect(url, connect_timeout=1).close()
    except psycopg.OperationalError:  # still starting
        return False
    return True


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextlib.contextmanager
def serving(server: Server) -> Iterator[Server]:
    """*server* answering on a thread of its own until the block ends, then shut
    down and closed (a test's small in-process HTTP site)."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
