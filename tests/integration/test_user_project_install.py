"""The repository installs as a library (``pip install``, offline, into a directory of
its own) and gives a user's project what it needs: the add-on, the ``bfs`` spider
(``scrapy crawl bfs`` in the project), and the Scrapy commands ``frontier``, ``pages`` and
``analyze``, found through their entry points with no setting of ours."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections import Counter
from typing import TYPE_CHECKING

import pytest

from tests.integration.test_node_failures import page_fetches
from tests.integration.userprojectruns import (
    FAST,
    copy_project,
    exported,
    scrapy_command,
)
from tests.servers import ROOT, running_site
from tests.site import url_of

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.integration

DISTRIBUTION = "scrapy-polite-frontier"
# Seconds pip may take to build and install the package (no download: offline).
INSTALL_TIMEOUT = 300.0
# Seconds one scrapy command may take.
COMMAND_TIMEOUT = 60.0


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package as ``pip install --target`` puts it: built from a copy of the
    repository's sources (a build writes into its source tree), with no index and
    the build tools of this environment."""
    work = tmp_path_factory.mktemp("install")
    source = work / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(
        ROOT / "crawler",
        source / "crawler",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    target = work / "site"
    command = [
        sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation",
        "--no-index", "--no-cache-dir", "--disable-pip-version-check", "--quiet",
        "--target", str(target), str(source),
    ]  # fmt: skip
    done = subprocess.run(
        command,
        cwd=work,
        env=environment(None),
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return target


def environment(target: Path | None) -> dict[str, str]:
    """This interpreter's environment with only *target* added to the import path:
    the repository itself is not importable (the dependencies are, from the
    interpreter's own site-packages)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k != "PYTHONPATH" and not k.startswith("SCRAPY_")
    }
    return env if target is None else env | {"PYTHONPATH": str(target)}


def run(
    target: Path, cwd: Path, *arguments: str, redis_url: str = ""
) -> subprocess.CompletedProcess[str]:
    """``python ARGUMENTS`` with the installed package (bounded), *redis_url* in
    REDIS_URL (which the project's settings read)."""
    return subprocess.run(
        [sys.executable, *arguments],
        cwd=cwd,
        env=environment(target) | {"REDIS_URL": redis_url},
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
        check=False,
    )


def test_the_package_installs_under_its_own_name_with_the_version_of_the_code(
    installed, tmp_path
):
    script = (
        "import importlib.metadata as m, crawler, crawler.addon; "
        f"print(crawler.__file__); print(m.version({DISTRIBUTION!r})); "
        "print(crawler.__version__); print(crawler.addon.Frontier.__name__)"
    )
    done = run(installed, tmp_path, "-c", script)
    assert done.returncode == 0, done.stderr[-3000:]
    where, version, code_version, addon = done.stdout.split()
    assert where.startswith(str(installed)), where  # not the repository's copy
    assert version == code_version  # one version, read from the code
    assert addon == "Frontier"


def test_a_project_lists_its_own_spiders(installed, tmp_path):
    # Scrapy 2.19's `scrapy list` reads SPIDER_MODULES without the add-ons' changes,
    # so the package's bfs spider is not listed; `scrapy crawl bfs` finds it (below).
    project = copy_project(tmp_path)
    done = run(installed, project, "-m", "scrapy", "list")
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["kinds", "pages", "rules", "sitemap", "starts"]


def test_a_project_crawls_with_the_bfs_spider_of_the_package(
    installed, tmp_path, redis_url
):
    project = copy_project(tmp_path)
    with running_site(hosts=1, pages=4, links=2) as site:
        done = run(
            installed,
            project,
            *scrapy_command("bfs", f"seeds={site.seeds[0]}", settings=FAST)[1:],
            redis_url=redis_url,
        )
        fetched = page_fetches(site)
    assert done.returncode == 0, done.stderr[-3000:]
    assert fetched == Counter((0, page) for page in range(4))
    records = exported(project / "bfs.jsonl")
    assert sorted((r["url"], r["status"], r["fate"]) for r in records) == sorted(
        (url_of(site.spec, 0, page), 200, "fetched") for page in range(4)
    ), done.stderr[-3000:]


@pytest.mark.parametrize("command", ["frontier", "pages", "analyze"])
def test_the_commands_of_the_package_work_in_a_project(installed, tmp_path, command):
    project = copy_project(tmp_path)
    listed = run(installed, project, "-m", "scrapy")
    assert f"\n  {command} " in listed.stdout, listed.stdout
    done = run(installed, project, "-m", "scrapy", command, "--help")
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"scrapy {command}" in done.stdout, done.stdout
