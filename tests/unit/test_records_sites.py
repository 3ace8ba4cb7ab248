"""The ``sites`` table (crawler/records/sites.py) on a real SQLite file and a real
PostgreSQL: each host's history carried over crawls, each crawl folded in once."""

from __future__ import annotations

import pytest

from crawler.policy.siteclass import WEIGHT, Observation, SiteHistory, classify
from crawler.records.database import RecordsDatabase, RecordsDatabaseError
from crawler.records.sites import SiteSave, SiteTable
from tests.unit.test_records import (  # noqa: F401 (fixtures)
    database_url,
)

PORTAL = Observation(pages=40, links=800, leaving=600, depth=2)
DEEP = Observation(pages=300, links=9000, leaving=90, depth=9)


@pytest.fixture
def table(database_url):  # noqa: F811 (the fixture)
    database = RecordsDatabase(database_url).open()
    table = SiteTable(database)
    table.create()
    yield table
    database.close()


def test_a_crawl_s_observation_is_kept_and_read_back(table):
    table.save("c@1", [SiteSave("docs.example.org", DEEP, "dfs (auto: ...)")])
    row = table.read()["docs.example.org"]
    assert (row.crawl, row.observation, row.strategy) == (
        "c@1",
        DEEP,
        "dfs (auto: ...)",
    )
    assert row.history == SiteHistory()
    # The same crawl starts from the averages only; the next from this crawl too.
    assert row.history_before("c@1") == SiteHistory()
    assert row.history_before("c@2") == SiteHistory().folded(DEEP)


def test_saves_of_one_crawl_keep_its_largest_totals(table):
    table.save("c@1", [SiteSave("a.org", DEEP, "x")])
    smaller = Observation(100, 3000, 30, 5)  # a node with older totals, late
    table.save("c@1", [SiteSave("a.org", smaller, "y")])
    row = table.read()["a.org"]
    assert row.observation == DEEP
    assert row.strategy == "y"
    assert row.history == SiteHistory()  # nothing folded within one crawl


def test_each_crawl_is_folded_into_the_averages_once_by_the_next(table):
    table.save("c@1", [SiteSave("a.org", PORTAL, "bfs")])
    table.save("c@1", [SiteSave("a.org", PORTAL, "bfs")])
    table.save("c@2", [SiteSave("a.org", DEEP, "dfs")])
    table.save("c@2", [SiteSave("a.org", DEEP, "dfs")])  # a second node of c@2
    row = table.read()["a.org"]
    assert row.crawl == "c@2"
    assert row.history == SiteHistory().folded(PORTAL)
    before_third = row.history_before("c@3")
    assert before_third.crawls == 2
    assert before_third.share == pytest.approx(WEIGHT * 0.01 + (1 - WEIGHT) * 0.75)
    assert classify(before_third).strategy == "dfs"  # 38% leave, depth 5.5


def test_hosts_are_saved_together_and_apart(table):
    table.save("c@1", [SiteSave(f"h{i}.org", PORTAL, "bfs") for i in range(700)])
    table.save("c@2", [SiteSave("h1.org", DEEP, "dfs")])
    rows = table.read()
    assert len(rows) == 700
    assert rows["h1.org"].history.crawls == 1
    assert rows["h2.org"].history.crawls == 0


def test_a_hostile_host_name_is_stored_as_clean_text(table):
    table.save("c@1", [SiteSave("a\x00b.org\udcff", PORTAL, "bfs")])
    assert list(table.read()) == ["ab.org?"]


def test_an_unreachable_database_is_one_line(tmp_path):
    database = RecordsDatabase(f"sqlite:///{tmp_path}/pages.db")
    table = SiteTable(database)
    (tmp_path / "pages.db").mkdir()  # a directory where the file should be
    with pytest.raises(RecordsDatabaseError, match="RECORDS_DATABASE_URL") as raised:
        table.create()
    assert "\n" not in str(raised.value)
