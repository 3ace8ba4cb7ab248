"""crawler/defaults/: the package gathers every section module's settings, each
defined once, and the well-known defaults keep their documented values."""

from __future__ import annotations

import importlib
import pkgutil
from typing import TYPE_CHECKING

import pytest
from scrapy.settings import Settings

import crawler.defaults
from crawler.defaults import default_settings, install_defaults

if TYPE_CHECKING:
    from types import ModuleType


def sections() -> list[ModuleType]:
    """Every module of the package (a section: its settings and their defaults)."""
    return [
        importlib.import_module(f"crawler.defaults.{info.name}")
        for info in pkgutil.iter_modules(crawler.defaults.__path__)
    ]


def settings_of(module: ModuleType) -> dict[str, object]:
    return {name: value for name, value in vars(module).items() if name.isupper()}


def test_the_package_has_its_sections() -> None:
    """The control: the union below is not over an empty list."""
    names = {module.__name__.rsplit(".", 1)[1] for module in sections()}
    assert {"scrapybuiltins", "redis", "frontier", "politeness", "revisit"} <= names
    assert len(names) == 20


def test_no_setting_is_defined_in_two_sections() -> None:
    where: dict[str, list[str]] = {}
    for module in sections():
        for name in settings_of(module):
            where.setdefault(name, []).append(module.__name__)
    assert {name: found for name, found in where.items() if len(found) > 1} == {}


def test_default_settings_are_the_union_of_the_sections() -> None:
    union: dict[str, object] = {}
    for module in sections():
        union.update(settings_of(module))
    assert default_settings() == union


def test_every_section_has_a_docstring() -> None:
    assert [m.__name__ for m in sections() if not (m.__doc__ or "").strip()] == []


def test_well_known_defaults_keep_their_documented_values() -> None:
    settings = default_settings()
    assert settings["DEPTH_LIMIT"] == 17
    assert settings["ROBOTSTXT_OBEY"] is True
    assert settings["FRONTIER_SHARDS"] == 64
    assert settings["FRONTIER_ORDER"] == "bfs"
    assert settings["POLITENESS_DAY_DELAY"] == 10.0
    assert settings["POLITENESS_NIGHT_DELAY"] == 1.0
    assert settings["TIMEOUTS_TIERS"] == [10, 30, 90]
    assert settings["REVISIT_POLICY"] == "off"
    assert settings["REDIS_URL"] == ""
    assert settings["DOWNLOAD_MAXSIZE"] == 16 * 1024 * 1024


def test_names_stay_importable_from_the_package() -> None:
    """``crawler.defaults.NAME`` and ``setmodule("crawler.defaults")`` see them all."""
    settings = Settings()
    settings.setmodule("crawler.defaults", priority="project")
    for name, value in default_settings().items():
        assert getattr(crawler.defaults, name) == value
        assert settings[name] == value


@pytest.mark.parametrize(
    ("former", "name", "value"),
    [("PAGESTORE_DIR", "PAGESTORE_URL", "/srv/pages"), ("WARC_DIR", "WARC_URL", "w")],
)
def test_a_setting_set_under_its_former_name_still_counts(
    former: str, name: str, value: str, caplog: pytest.LogCaptureFixture
) -> None:
    settings = Settings()
    settings.set(former, value, priority="cmdline")
    install_defaults(settings)
    install_defaults(settings)  # the add-on installs them again: one warning
    assert settings[name] == value
    assert caplog.text.count(f"{former} is now called {name}") == 1


def test_the_new_name_set_as_high_wins_over_the_former() -> None:
    settings = Settings()
    settings.set("PAGESTORE_DIR", "/old", priority="project")
    settings.set("PAGESTORE_URL", "s3://bucket/pages", priority="cmdline")
    install_defaults(settings)
    assert settings["PAGESTORE_URL"] == "s3://bucket/pages"
