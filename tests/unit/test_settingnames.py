"""Settings a crawl would ignore: the pure matcher (crawler/policy/settingnames.py),
the check at start (crawler/context/settingscheck.py), and docs/migrating.md against
the scrapy-redis table (crawler/policy/scrapyredis.py)."""

from __future__ import annotations

import re

import pytest
from scrapy.settings import Settings

from crawler.context.settingscheck import (
    ignored_setting_notes,
    known_setting_names,
    our_prefixes,
)
from crawler.defaults import install_defaults
from crawler.policy.scrapyredis import SCRAPY_REDIS_REPLACEMENTS
from crawler.policy.settingnames import (
    leftover_notes,
    setting_prefixes,
    unknown_setting_notes,
)
from tests.servers import ROOT

KNOWN = frozenset({"POLITENESS_DAY_DELAY", "POLITENESS_NIGHT_DELAY", "FRONTIER_RESET"})
PREFIXES = frozenset({"POLITENESS_", "FRONTIER_"})
MIGRATING = ROOT / "docs" / "migrating.md"


@pytest.mark.parametrize(
    ("given", "notes"),
    [
        (
            ["POLITENESS_DAY_DELEY"],
            [
                (
                    "Unknown setting POLITENESS_DAY_DELEY (did you mean "
                    "POLITENESS_DAY_DELAY?): ignored"
                )
            ],
        ),
        (
            ["FRONTIER_RESTE"],
            ["Unknown setting FRONTIER_RESTE (did you mean FRONTIER_RESET?): ignored"],
        ),
        (["FRONTIER_WHATEVER"], ["Unknown setting FRONTIER_WHATEVER: ignored"]),
        (["POLITENESS_DAY_DELAY", "FRONTIER_RESET"], []),  # known
        (["MY_OWN_SETTING", "DOWNLOAD_DELEY"], []),  # not our prefixes
        (["FRONTIER_QQQQQQ"] * 2, ["Unknown setting FRONTIER_QQQQQQ: ignored"]),  # once
    ],
)
def test_unknown_names_with_our_prefixes_are_named(
    given: list[str], notes: list[str]
) -> None:
    assert unknown_setting_notes(given, KNOWN, PREFIXES) == notes


def test_leftovers_say_what_replaces_them_without_markdown() -> None:
    replacements = {"SCHEDULER_PERSIST": "`FRONTIER_PERSIST` (default **True**)"}
    assert leftover_notes(["SCHEDULER_PERSIST", "OTHER"], replacements) == [
        (
            "SCHEDULER_PERSIST is a scrapy-redis setting, ignored here; instead: "
            "FRONTIER_PERSIST (default True)"
        )
    ]


def test_prefixes_are_first_words() -> None:
    assert setting_prefixes(["FRONTIER_RESET", "BOT", "REDIS_URL"]) == {
        "FRONTIER_",
        "REDIS_",
    }


def test_our_prefixes_come_from_the_defaults() -> None:
    assert {"FRONTIER_", "POLITENESS_", "PAGESTORE_", "WARC_", "ROBOTS_"} <= (
        our_prefixes()
    )
    assert not {"DEPTH_", "DOWNLOAD_", "CONCURRENT_"} & our_prefixes()  # Scrapy's
    assert "DOWNLOAD_DELAY" in known_setting_names()  # Scrapy's own are known


def user_settings(**values: object) -> Settings:
    """Settings as a crawl has them: our defaults at the add-on's priority,
    *values* at the project's."""
    settings = Settings()
    install_defaults(settings)
    settings.setdict(values, priority="project")
    return settings


def test_only_what_the_user_set_counts() -> None:
    settings = user_settings(POLITENESS_DAY_DELEY=3, SCHEDULER_PERSIST=True)
    settings.set("FRONTIER_FROM_AN_ADDON", 1, priority="addon")
    assert ignored_setting_notes(settings) == [
        (
            "SCHEDULER_PERSIST is a scrapy-redis setting, ignored here; instead: "
            "FRONTIER_PERSIST (default True: a rerun resumes; FRONTIER_RESET=True "
            "starts over)"
        ),
        (
            "Unknown setting POLITENESS_DAY_DELEY (did you mean POLITENESS_DAY_DELAY?): "
            "ignored"
        ),
    ]


def test_a_default_crawl_has_nothing_to_say() -> None:
    assert (
        ignored_setting_notes(user_settings(BOT_NAME="crawler", LOG_LEVEL="INFO")) == []
    )


def migrating_rows() -> list[tuple[list[str], str]]:
    """Each row of docs/migrating.md's tables of scrapy-redis settings: the setting
    names of its first cell, and its second cell."""
    rows = []
    for line in MIGRATING.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) != 2:
            continue
        names = re.findall(r"`([A-Z][A-Z0-9_]+)`", cells[0])
        if names:
            rows.append((names, cells[1]))
    return rows


def test_the_migration_guide_says_what_the_warning_says() -> None:
    """Each name of the table has a row with its text; each row's name that is not
    kept ("the same") is in the table."""
    documented = {name: text for names, text in migrating_rows() for name in names}
    assert {name: documented.get(name) for name in SCRAPY_REDIS_REPLACEMENTS} == (
        SCRAPY_REDIS_REPLACEMENTS
    )
    ignored = {n for n, text in documented.items() if not text.startswith("the same")}
    assert ignored == set(SCRAPY_REDIS_REPLACEMENTS)


def test_replacements_name_real_settings() -> None:
    known = known_setting_names()
    named = {
        name
        for text in SCRAPY_REDIS_REPLACEMENTS.values()
        for name in re.findall(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b", text)
    }
    assert named
    assert named <= known


def test_a_former_name_of_ours_is_known_not_a_typo() -> None:
    assert {"PAGESTORE_DIR", "WARC_DIR"} <= known_setting_names()
