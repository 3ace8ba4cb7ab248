"""Real HTML corpora served by nginx on loopback, for ``bench.realsites``.

The default corpora are Debian documentation packages (real sites of a few hundred
to a thousand pages, ~88 KB and ~130 links a page). One nginx (``daemon off;``, one
worker, its own config, pid file and logs in a temporary directory) serves each
corpus from its own address, 127.0.0.31, .32, ... on one port, gzip on for the
first site only, and logs every response of each site to its own file
(``bench.accesslog.LOG_FORMAT``).
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bench import accesslog, procs

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from pathlib import Path

# (name, folder, Debian package)
DEFAULT_CORPORA: tuple[tuple[str, str, str], ...] = (
    ("python", "/usr/share/doc/python3.11/html", "python3.11-doc"),
    ("postgresql", "/usr/share/doc/postgresql-doc-15/html", "postgresql-doc-15"),
    ("sqlite", "/usr/share/doc/sqlite3", "sqlite3-doc"),
)
TOOLS = (("nginx", "nginx"), ("wget", "wget"))  # (binary, Debian package)
FIRST_ADDRESS = 31  # 127.0.0.31, .32, ...
PORT = 8931
START_TIMEOUT = 15.0
# Straight to loopback, whatever *_proxy variables say.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))
MIME_TYPES = "/etc/nginx/mime.types"


@dataclass(frozen=True, slots=True)
class Corpus:
    """A folder of HTML to serve as one site."""

    name: str
    root: Path


@dataclass(frozen=True, slots=True)
class Site:
    """A corpus being served: its origin (``http://host:port``) and access log."""

    corpus: Corpus
    host: str
    port: int
    log: Path
    gzip: bool

    @property
    def origin(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def root_url(self) -> str:
        return self.origin + "/"


def missing_packages(corpora: Sequence[Corpus], defaults: bool) -> list[str]:
    """Debian packages to install: tools not on PATH, default corpora not on disk."""
    missing = [package for binary, package in TOOLS if not _which(binary)]
    if defaults:
        missing += [
            package
            for _, folder, package in DEFAULT_CORPORA
            if any(str(c.root) == folder and not c.root.is_dir() for c in corpora)
        ]
    return missing


def _which(binary: str) -> str | None:
    # nginx lives in /usr/sbin, which a non-root PATH may lack.
    return shutil.which(binary) or shutil.which(binary, path="/usr/sbin:/sbin")


def install(packages: Sequence[str]) -> None:
    """``apt-get install -y`` *packages* (as root); raises ``CalledProcessError``."""
    subprocess.run(["apt-get", "install", "-y", *packages], check=True)


def nginx_config(sites: Sequence[Site], workdir: Path) -> str:
    """The whole nginx config: one server a site, everything kept in *workdir*."""
    servers = "\n".join(_server_block(site) for site in sites)
    temp = "\n".join(
        f"    {kind}_temp_path {workdir / kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return f"""worker_processes 1;
daemon off;
pid {workdir / "nginx.pid"};
error_log {workdir / "error.log"} warn;
events {{ worker_connections 1024; }}
http {{
    include {MIME_TYPES};
    default_type application/octet-stream;
    log_format realsites '{accesslog.LOG_FORMAT}';
    access_log off;
    sendfile on;
    keepalive_requests 100000;
{temp}
{servers}
}}
"""


def _server_block(site: Site) -> str:
    gzip = "on" if site.gzip else "off"
    # A folder without index.html (--corpus) still gets a root page: its listing.
    autoindex = "off" if (site.corpus.root / "index.html").exists() else "on"
    return f"""    server {{
        listen {site.host}:{site.port};
        server_name _;
        root {site.corpus.root};
        index index.html;
        autoindex {autoindex};
        gzip {gzip};
        access_log {site.log} realsites;
    }}"""


def plan_sites(corpora: Sequence[Corpus], workdir: Path, port: int) -> list[Site]:
    """Addresses 127.0.0.31, .32, ... in order; gzip for the first site only."""
    return [
        Site(
            corpus=corpus,
            host=f"127.0.0.{FIRST_ADDRESS + index}",
            port=port,
            log=workdir / f"{corpus.name}.access.log",
            gzip=index == 0,
        )
        for index, corpus in enumerate(corpora)
    ]


@contextlib.contextmanager
def serving(
    corpora: Sequence[Corpus], workdir: Path, port: int
) -> Iterator[list[Site]]:
    """nginx serving *corpora* until the block ends (an error or Ctrl-C too);
    stopped by its pid. Raises ``RuntimeError`` if a site does not answer."""
    sites = plan_sites(corpora, workdir, port)
    config = workdir / "nginx.conf"
    config.write_text(nginx_config(sites, workdir), "utf-8")
    # The worker may run as nobody: it must be able to enter.
    workdir.chmod(0o755)
    binary = _which("nginx") or "nginx"
    process = subprocess.Popen(
        [
            binary,
            "-c",
            str(config),
            "-p",
            str(workdir),
            "-e",
            str(workdir / "error.log"),
        ]
    )
    try:
        for site in sites:
            _wait_for(site, process, workdir)
        yield sites
    finally:
        procs.stop(process)


def _wait_for(site: Site, process: subprocess.Popen[bytes], workdir: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"nginx exited: {_error_log(workdir)}")
        try:
            with _DIRECT.open(site.root_url, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"{site.root_url} did not answer 200: {_error_log(workdir)}"
            )
        time.sleep(0.1)


def _error_log(workdir: Path) -> str:
    path = workdir / "error.log"
    return path.read_text("utf-8", "replace")[-1000:] if path.exists() else ""


def log_sizes(sites: Sequence[Site]) -> dict[str, int]:
    """Each access log's size now: where the next crawl's lines start."""
    return {site.corpus.name: site.log.stat().st_size for site in sites}


def lines_since(
    sites: Sequence[Site], offsets: dict[str, int]
) -> list[accesslog.LogLine]:
    """Every response the sites logged since *offsets* (``log_sizes``)."""
    lines = []
    for site in sites:
        with site.log.open("rb") as log:
            log.seek(offsets[site.corpus.name])
            text = log.read().decode("utf-8", "replace")
        lines += accesslog.parse_lines(text, site.origin)
    return lines


def nginx_version() -> str:
    """``nginx -v``'s version (it prints to stderr)."""
    done = subprocess.run(
        [_which("nginx") or "nginx", "-v"], capture_output=True, text=True, check=False
    )
    return done.stderr.strip().rpartition("/")[2]
