"""scrapyd: deploy the project with scrapyd-deploy and run the bfs spider as a job.

A real scrapyd on loopback, with its own scrapyd.conf in a temporary directory. The
egg is built in a copy of the checkout (the files git would see), so the build's
setup.py, build/ and *.egg-info/ never land in the repository; the test checks that
git would ignore them had they been written there.
"""

from __future__ import annotations

import configparser
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import redis as redis_py

from tests.integration.test_crawl import fetched
from tests.servers import ROOT, running_site, wait_for
from tests.site import bfs_depths, url_of

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.integration

BIN = Path(sys.executable).parent
START_TIMEOUT = 20.0  # seconds for scrapyd to answer
DEPLOY_TIMEOUT = 60.0  # seconds for scrapyd-deploy to build and upload the egg
JOB_TIMEOUT = 120.0  # seconds for the job to finish
STOP_TIMEOUT = 10.0  # seconds for scrapyd (and a job still running) to exit

SCRAPYD_CONF = """\
[scrapyd]
bind_address = 127.0.0.1
http_port = {port}
eggs_dir = {home}/eggs
logs_dir = {home}/logs
items_dir = {home}/items
dbs_dir = {home}/dbs
max_proc = 1
poll_interval = 0.2
"""


@dataclass(frozen=True)
class Scrapyd:
    url: str
    home: Path
    output: Path  # scrapyd's own log (its stdout and stderr)

    def call(self, endpoint: str, data: list[tuple[str, str]] | None = None) -> Any:
        """GET (or POST *data* to) a JSON endpoint; the answer must be status ok."""
        body = urllib.parse.urlencode(data).encode() if data is not None else None
        url = f"{self.url}/{endpoint}"
        with urllib.request.urlopen(url, body, timeout=30) as answer:  # noqa: S310 (loopback)
            result = json.load(answer)
        assert result.get("status") == "ok", result
        return result

    def answers(self) -> bool:
        try:
            self.call("daemonstatus.json")
        except OSError:
            return False
        return True

    def log(self) -> str:
        return self.output.read_text(errors="replace")

    def tail(self) -> str:
        return self.log()[-3000:]


@contextlib.contextmanager
def running_scrapyd(home: Path) -> Iterator[Scrapyd]:
    """Start scrapyd on 127.0.0.1 and a free port; stop it (and its jobs) at the end."""
    home.mkdir()
    port = free_port()
    (home / "scrapyd.conf").write_text(SCRAPYD_CONF.format(port=port, home=home))
    server = Scrapyd(f"http://127.0.0.1:{port}", home, home / "scrapyd.out")
    with server.output.open("w") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "scrapyd"],
            cwd=home,  # scrapyd reads ./scrapyd.conf; jobs run here too
            env=clean_env(),
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its jobs join its process group
        )
    try:
        wait_for(
            lambda: process.poll() is not None or server.answers(), START_TIMEOUT, 0.2
        )
        assert process.poll() is None, server.tail()  # it did not exit at start
        assert server.answers(), server.tail()
        yield server
    finally:
        stop_group(process)


def stop_group(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM scrapyd's process group, SIGKILL what is left (bounded)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(STOP_TIMEOUT)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)  # a job that outlived scrapyd


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def clean_env() -> dict[str, str]:
    """This environment without SCRAPY_* (a test may have set a project there)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}


def copy_checkout(target: Path) -> set[Path]:
    """Copy the files git would see (tracked, or new and not ignored) to *target*."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    copied = set()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():  # not deleted in the working tree
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
            copied.add(Path(name))
    return copied


def deploy(server: Scrapyd, checkout: Path) -> dict[str, Any]:
    """``scrapyd-deploy`` in a copy of the checkout, its [deploy] url pointed at *server*."""
    copied = copy_checkout(checkout)
    config = configparser.ConfigParser()
    config.read(ROOT / "scrapy.cfg")
    assert config["deploy"]["project"] == "crawler"
    config["deploy"]["url"] = server.url
    with (checkout / "scrapy.cfg").open("w") as cfg:
        config.write(cfg)
    result = subprocess.run(
        [BIN / "scrapyd-deploy"],
        cwd=checkout,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=DEPLOY_TIMEOUT,
        check=False,
    )
    assert result.returncode == 0, result.stderr + result.stdout
    left = {p.relative_to(checkout) for p in checkout.rglob("*") if p.is_file()}
    assert_git_ignores(left - copied)
    return dict(json.loads(result.stdout))


def assert_git_ignores(paths: set[Path]) -> None:
    """Every path (relative to the repository) matches a pattern of .gitignore."""
    assert Path("setup.py") in paths  # the build did run here
    ignored = subprocess.run(
        ["git", "check-ignore", "--stdin", "-z"],
        cwd=ROOT,
        input="\0".join(map(str, sorted(paths))),
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    assert paths - {Path(p) for p in ignored.split("\0") if p} == set()


def run_job(server: Scrapyd, seeds: str, settings: dict[str, str]) -> str:
    """Schedule the bfs spider with ``setting=KEY=VALUE`` overrides; wait for its end."""
    job = uuid.uuid4().hex
    server.call(
        "schedule.json",
        [("project", "crawler"), ("spider", "bfs"), ("jobid", job), ("seeds", seeds)]
        + [("setting", f"{key}={value}") for key, value in settings.items()],
    )
    deadline = time.monotonic() + JOB_TIMEOUT
    while time.monotonic() < deadline:
        jobs = server.call("listjobs.json?project=crawler")
        if job in {finished["id"] for finished in jobs["finished"]}:
            return job
        time.sleep(0.5)
    pytest.fail(f"job {job} not finished in {JOB_TIMEOUT} s\n{server.tail()}")


def test_deploy_and_schedule_a_crawl_with_setting_overrides(tmp_path, redis_url):
    prefix = f"scrapyd-{uuid.uuid4().hex[:8]}"
    with (
        running_site(hosts=3, pages=10, links=3, cross=0.3) as site,
        running_scrapyd(tmp_path / "scrapyd") as server,
    ):
        deployed = deploy(server, tmp_path / "checkout")
        assert (deployed["project"], deployed["spiders"]) == ("crawler", 1), deployed
        job = run_job(
            server,
            site.seeds[0],
            {
                "REDIS_URL": redis_url,
                "FRONTIER_KEY_PREFIX": prefix,
                "POLITENESS_DAY_DELAY": "0",
                "POLITENESS_NIGHT_DELAY": "0",
                "POLITENESS_JITTER": "0",
                "ROBOTSTXT_OBEY": "False",
                "TELNETCONSOLE_ENABLED": "False",
            },
        )
        pages = fetched(site)
    expected = bfs_depths(site.spec, [(0, 0)])
    assert Counter(pages) == Counter(list(expected))  # every page, each once
    log = (server.home / "logs" / "crawler" / "bfs" / f"{job}.log").read_text()
    assert "'finish_reason': 'finished'" in log, log[-3000:]
    assert "log_count/ERROR" not in log, log[-3000:]
    finished = f"Process finished: project='crawler' spider='bfs' job='{job}'"
    assert finished in server.log(), server.tail()  # exit status 0, not "Process died"
    items = (server.home / "items" / "crawler" / "bfs" / f"{job}.jl").read_text()
    urls = [json.loads(line)["url"] for line in items.splitlines()]
    assert sorted(urls) == sorted(url_of(site.spec, *page) for page in expected)
    client = redis_py.Redis.from_url(redis_url)
    try:
        assert client.exists(f"{prefix}:meta")  # FRONTIER_KEY_PREFIX took effect
        assert all(key.startswith(f"{prefix}:".encode()) for key in client.scan_iter())
    finally:
        client.close()
