"""Our commands in another Scrapy project: found through the ``scrapy.commands`` entry
points pyproject.toml declares, and finding each spider's crawl by its name."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from typing import TYPE_CHECKING

import pytest

from tests.servers import ROOT

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.integration

SPIDERS = """
from scrapy import Spider


class Alpha(Spider):
    name = "alpha"
    custom_settings = {"FRONTIER_KEY_PREFIX": "alpha-crawl"}


class Beta(Spider):
    name = "beta"
"""


def make_project(tmp_path: Path, *, commands_module: bool) -> Path:
    """A project of two spiders; the package's entry points are "installed" by a
    dist-info directory written from pyproject.toml, unless COMMANDS_MODULE is used."""
    project = tmp_path / "project"
    package = project / "otherproject"
    (package / "spiders").mkdir(parents=True)
    (project / "scrapy.cfg").write_text("[settings]\ndefault = otherproject.settings\n")
    (package / "__init__.py").write_text("")
    (package / "spiders" / "__init__.py").write_text(SPIDERS)
    settings = 'SPIDER_MODULES = ["otherproject.spiders"]\n'
    if commands_module:
        settings += 'COMMANDS_MODULE = "crawler.commands"\n'
    (package / "settings.py").write_text(settings)
    if not commands_module:
        declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
        commands = declared["entry-points"]["scrapy.commands"]
        info = tmp_path / "site" / "crawler_under_test-0.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(
            "Metadata-Version: 2.1\nName: crawler-under-test\n"
        )
        lines = [f"{name} = {target}" for name, target in commands.items()]
        (info / "entry_points.txt").write_text(
            "[scrapy.commands]\n" + "\n".join(lines) + "\n"
        )
    return project


def scrapy(
    project: Path, redis_url: str, *args: str
) -> subprocess.CompletedProcess[str]:
    site = project.parent / "site"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(project), str(site), str(ROOT)]),
    }
    env.pop("SCRAPY_SETTINGS_MODULE", None)
    return subprocess.run(
        [sys.executable, "-m", "scrapy", *args]
        + (["-s", f"REDIS_URL={redis_url}"] if args else []),
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_commands_are_entry_points_of_the_package(tmp_path, redis, redis_url):
    project = make_project(tmp_path, commands_module=False)
    listed = scrapy(project, redis_url)
    for command in ("frontier", "pages", "analyze", "crawl"):
        assert f"\n  {command} " in listed.stdout, listed.stdout
    # Ours, not Scrapy's: its exit statuses say what happened.
    assert "(its exit status says how it ended)" in listed.stdout
    pushed = scrapy(
        project, redis_url, "frontier", "seed", "beta", "https://b.example/"
    )
    assert pushed.returncode == 0, pushed.stderr
    assert redis.lrange("beta:seeds", 0, -1) == [b"https://b.example/"]


def test_each_spiders_crawl_is_found_by_its_name(tmp_path, redis, redis_url):
    project = make_project(tmp_path, commands_module=True)
    url = "https://a.example/"
    assert scrapy(project, redis_url, "frontier", "seed", "alpha", url).returncode == 0
    assert redis.lrange("alpha-crawl:seeds", 0, -1) == [url.encode()]
    assert scrapy(project, redis_url, "frontier", "pause", "beta").returncode == 0
    assert redis.hget("beta:control", "paused") == b"1"
    assert not redis.exists("alpha-crawl:control")


def test_which_spider_is_meant_must_be_said_when_there_are_two(
    tmp_path, redis, redis_url
):
    project = make_project(tmp_path, commands_module=True)
    result = scrapy(project, redis_url, "frontier", "pause")
    assert result.returncode == 1
    expected = (
        "scrapy frontier: this project has 2 spiders (alpha, beta): name the one "
        "whose crawl is meant (or set FRONTIER_KEY_PREFIX, or pass --prefix)"
    )
    assert result.stderr.splitlines() == [expected]
    assert not redis.keys("*")


def test_the_commands_read_the_add_ons_defaults(tmp_path, redis, redis_url):
    project = make_project(tmp_path, commands_module=False)
    # The project sets no RECORDS_DATABASE_URL: the add-on's default is looked for.
    pages = scrapy(project, redis_url, "pages")
    assert pages.returncode == 1
    expected = (
        "scrapy pages: no records database at '.crawl/pages.db' "
        "(RECORDS_DATABASE_URL): has a crawl written one?"
    )
    assert pages.stderr.splitlines() == [expected]
    # ...and FRONTIER_SHARDS (64) for the status of a crawl.
    redis.hset("beta:meta", "schema_version", "3")
    status = scrapy(project, redis_url, "frontier", "status", "beta")
    assert status.returncode == 0, status.stderr
    assert "Crawl 'beta': finished, 64 shards" in status.stdout
