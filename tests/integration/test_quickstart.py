"""The README's quick start as a newcomer runs it: ``./dev demo`` offline, the tour's
commands after it, and the README's commands held to what these tests run."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.servers import ROOT

if TYPE_CHECKING:
    from tests.servers import RunningSite

README = ROOT / "README.md"
# The quick start's two commands, in the README's first shell block.
DEMO = ["./dev", "demo"]
TEST = ["./dev", "test"]
# Seconds the demo may take, set-up and end of crawl included (it takes about five).
DEMO_TIMEOUT = 180.0
# Seconds one of the tour's commands, or a ./dev crawl of the test site, may take.
COMMAND_TIMEOUT = 120.0
# The test site at full speed (the defaults wait 10 s between two pages of a host).
FAST = ["-s", "POLITENESS_DAY_DELAY=0", "-s", "POLITENESS_NIGHT_DELAY=0"]
# What a checkout needs for ./dev demo, linked from this one.
LINKED = ("crawler", "tests", "scrapy.cfg", "requirements.txt", "requirements-dev.txt")
SHELL_BLOCK = re.compile(r"^```sh\n(.*?)^```", re.MULTILINE | re.DOTALL)
LOOPBACK_URL = re.compile(r"https?://(127\.|localhost\b)")

pytestmark = pytest.mark.integration


def shell_blocks(text: str) -> list[list[list[str]]]:
    """The README's shell blocks, each as its commands (comments dropped)."""
    return [
        [shlex.split(line, comments=True) for line in block.splitlines()]
        for block in SHELL_BLOCK.findall(text)
    ]


def section(text: str, title: str) -> str:
    """The text of the README section headed ``## title``."""
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def checkout(directory: Path) -> Path:
    """A checkout in *directory* whose ``.crawl/`` is its own: ``./dev`` copied (it
    works in its own directory), the code linked, and ``.venv`` the environment that
    runs these tests, which holds every requirement (so ``./dev`` installs nothing)."""
    shutil.copy2(ROOT / "dev", directory / "dev")
    for name in LINKED:
        (directory / name).symlink_to(ROOT / name)
    (directory / ".venv").symlink_to(Path(sys.prefix))
    return directory


def offline_environment() -> dict[str, str]:
    """A newcomer's shell with no Redis named; pip may not download (PIP_NO_INDEX)
    and the demo site takes any free port."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("SCRAPY_", "REDIS_"))
    }
    return env | {"PIP_NO_INDEX": "1", "DEMO_PORT": "0"}


def demo_size(dev: Path) -> int:
    """Pages the demo site serves: hosts x pages, as ./dev starts it."""
    text = dev.read_text(encoding="utf-8")
    hosts = re.search(r"^demo_hosts=(\d+)$", text, re.MULTILINE)
    pages = re.search(r"^demo_pages=(\d+)$", text, re.MULTILINE)
    assert hosts, "./dev no longer names demo_hosts"
    assert pages, "./dev no longer names demo_pages"
    return int(hosts[1]) * int(pages[1])


def run(
    command: list[str], cwd: Path, timeout: float
) -> subprocess.CompletedProcess[str]:
    """*command* in *cwd*, offline, to its end (bounded)."""
    return subprocess.run(
        command,
        cwd=cwd,
        env=offline_environment(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture(scope="module")
def demo(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """``./dev demo`` run once, in a checkout of its own: the checkout and the run."""
    home = checkout(tmp_path_factory.mktemp("demo"))
    return home, run(DEMO, home, DEMO_TIMEOUT)


def test_the_demo_crawls_every_page_offline_and_says_what_next(
    demo: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    home, done = demo
    assert done.returncode == 0, done.stderr[-3000:]
    records = [
        json.loads(line)
        for line in (home / ".crawl/demo-pages.jsonl").read_text().splitlines()
    ]
    site = json.loads((home / ".crawl/demo-site.json").read_text())
    total = demo_size(home / "dev")
    assert len({record["url"] for record in records}) == len(records) == total
    assert {record["fate"] for record in records} == {"fetched"}
    assert {record["host"] for record in records} == {
        host.split(":")[0] for host in site["hosts"]
    }
    assert f"crawled {total} of the site's {total} pages" in done.stdout
    assert "Next steps:" in done.stdout
    for step in (
        "frontier status --prefix demo",
        "frontier web --prefix demo",
        "pages",
    ):
        assert f".venv/bin/scrapy {step}" in done.stdout
    assert "./dev demo --join" in done.stdout
    assert " ERROR: " not in done.stderr


def test_the_tours_commands_read_what_the_demo_left(
    demo: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    home, done = demo
    assert done.returncode == 0, done.stderr[-3000:]
    tour = shell_blocks(
        section(README.read_text(encoding="utf-8"), "A five-minute tour")
    )
    after = [command for command in tour[-1] if command[:1] == [".venv/bin/scrapy"]]
    assert len(after) == 2, after
    status, pages = (run(command, home, COMMAND_TIMEOUT) for command in after)
    assert status.returncode == 0, status.stderr[-3000:]
    assert "Crawl 'demo': finished" in status.stdout
    assert f"fetched {demo_size(home / 'dev')}" in status.stdout
    assert pages.returncode == 0, pages.stderr[-3000:]
    assert len(pages.stdout.splitlines()) == 1 + 5  # a header, then --limit 5 rows


def test_the_readmes_first_commands_are_the_tested_ones() -> None:
    first = shell_blocks(README.read_text(encoding="utf-8"))[0]
    assert [command for command in first if command] == [DEMO, TEST]


def _crawl_commands(text: str) -> list[list[str]]:
    """Every command of the README's shell blocks that starts a crawl."""
    return [
        command
        for block in shell_blocks(text)
        for command in block
        if command[:2] == ["./dev", "crawl"] or command[1:3] == ["crawl", "bfs"]
    ]


def test_the_readmes_real_site_crawls_stay_home_and_shallow() -> None:
    text = README.read_text(encoding="utf-8")
    dev_crawls = [c for c in _crawl_commands(text) if c[:2] == ["./dev", "crawl"]]
    assert dev_crawls, "the README shows no ./dev crawl of a real site"
    for command in dev_crawls:
        assert not LOOPBACK_URL.match(command[2]), command
        assert "scope=seed-hosts" in command, command
        assert any(re.fullmatch(r"DEPTH_LIMIT=[1-9]\d*", part) for part in command)
    for command in _crawl_commands(text):
        seeded = any(part.startswith(("seeds=", "seeds_file=")) for part in command)
        if seeded or command[:2] == ["./dev", "crawl"]:
            scopes = [part for part in command if part.startswith("scope=")]
            assert scopes, f"an open crawl of the Web, by accident: {command}"
            assert scopes != ["scope=any"], command


def _dev_crawl(home: Path, seed: str, *options: str) -> list[dict[str, object]]:
    """``./dev crawl SEED`` of the test site at full speed: its records."""
    done = run(
        ["./dev", "crawl", seed, *FAST, "-L", "INFO", "-O", "pages.jsonl", *options],
        home,
        COMMAND_TIMEOUT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = (home / "pages.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_dev_crawl_stays_on_the_seeds_hosts_unless_told(
    tmp_path: Path, site: RunningSite
) -> None:
    home = checkout(tmp_path)
    at_home = _dev_crawl(home, site.seeds[0])
    assert {record["host"] for record in at_home} == {"127.0.0.2"}
    assert len(at_home) == site.spec.pages
    everywhere = _dev_crawl(
        home, site.seeds[0], "-a", "scope=any", "-s", "FRONTIER_RESET=1"
    )
    assert len({record["host"] for record in everywhere}) == site.spec.hosts


def test_dev_crawl_without_seeds_points_at_the_demo(tmp_path: Path) -> None:
    done = run(["./dev", "crawl"], checkout(tmp_path), COMMAND_TIMEOUT)
    assert done.returncode == 2
    assert "./dev demo" in done.stderr
