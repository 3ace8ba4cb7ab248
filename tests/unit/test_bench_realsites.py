"""The pure parts of bench.realsites: access-log lines, coverage sets, the summary."""

from __future__ import annotations

import pytest

from bench.accesslog import coverage, fetched, parse_line, parse_lines
from bench.nginxsites import Corpus, nginx_config, plan_sites
from bench.realsummary import Spread, spread, summarize, summary_table

ORIGIN = "http://127.0.0.31:8931"

# Lines as nginx writes them with bench.accesslog.LOG_FORMAT (tab-separated).
PAGE = "1764020000.125\t200\tGET\t/library/os.html\t41234\t41500\ttext/html"
ROBOTS = "1764020000.002\t404\tGET\t/robots.txt\t153\t306\ttext/html"
CSS = "1764020001.500\t200\tGET\t/_static/basic.css\t14810\t15100\ttext/css"
GZIPPED = "1764020003.000\t200\tGET\t/index.html?q=a%20b\t3000\t3290\ttext/html; charset=utf-8"
NO_TYPE = "1764020002.000\t304\tGET\t/a.html\t0\t180\t-"


def test_a_line_gives_each_field_and_the_full_url():
    line = parse_line(PAGE, ORIGIN)
    assert line.time == 1764020000.125
    assert line.status == 200
    assert line.method == "GET"
    assert line.url == "http://127.0.0.31:8931/library/os.html"
    assert line.body_bytes == 41234
    assert line.bytes_sent == 41500
    assert line.content_type == "text/html"


def test_an_absent_content_type_reads_as_empty():
    assert parse_line(NO_TYPE, ORIGIN).content_type == ""


@pytest.mark.parametrize(
    ("line", "is_page"),
    [
        (PAGE, True),
        (GZIPPED, True),  # parameters after the media type
        (ROBOTS, False),  # nginx's 404 page is text/html, but not a page
        (CSS, False),
        (NO_TYPE, False),
        ("1\t200\tGET\t/x.xhtml\t1\t1\tapplication/xhtml+xml", True),
        ("1\t200\tGET\t/X.HTML\t1\t1\tTEXT/HTML", True),
    ],
)
def test_an_html_page_is_a_200_with_an_html_media_type(line, is_page):
    assert parse_line(line, ORIGIN).is_html_page is is_page


@pytest.mark.parametrize(
    "line",
    [
        "1764020000.125 200 GET /a.html 1 1 text/html",  # spaces, not tabs
        "1764020000.125\t200\tGET\t/a.html\t1\t1",  # a field short
        "when\t200\tGET\t/a.html\t1\t1\ttext/html",
    ],
)
def test_a_line_in_another_format_is_refused(line):
    with pytest.raises(ValueError, match=r"."):
        parse_line(line, ORIGIN)


def test_blank_lines_are_skipped():
    text = f"{PAGE}\n\n{CSS}\n"
    assert [line.url for line in parse_lines(text, ORIGIN)] == [
        ORIGIN + "/library/os.html",
        ORIGIN + "/_static/basic.css",
    ]


def test_a_crawl_counts_responses_pages_other_and_its_time_span():
    text = f"{ROBOTS}\n{PAGE}\n{CSS}\n{GZIPPED}\n{NO_TYPE}\n{PAGE}"
    lines = parse_lines(text, ORIGIN)
    crawl = fetched(lines)
    assert crawl.responses == 6
    assert crawl.html_pages == {
        ORIGIN + "/library/os.html",
        ORIGIN + "/index.html?q=a%20b",
    }
    assert crawl.non_html == 3  # robots 404, the CSS, the 304
    assert crawl.statuses == {200: 4, 304: 1, 404: 1}
    assert crawl.errors == (ORIGIN + "/robots.txt",)
    assert crawl.bytes_sent == 306 + 41500 + 15100 + 3290 + 180 + 41500
    assert crawl.first == 1764020000.002
    assert crawl.last == 1764020003.000
    assert crawl.seconds == pytest.approx(2.998)


def test_a_crawl_with_no_response_spans_no_time():
    crawl = fetched([])
    assert (crawl.responses, crawl.first, crawl.seconds) == (0, None, 0.0)


def test_coverage_is_what_is_missing_from_the_reference_and_what_is_extra():
    reference = frozenset({"http://h/a", "http://h/b", "http://h/c"})
    crawl = frozenset({"http://h/c", "http://h/a", "http://h/z", "http://h/y"})
    result = coverage(crawl, reference)
    assert result.missing == ("http://h/b",)
    assert result.extra == ("http://h/y", "http://h/z")
    assert coverage(reference, reference).missing == ()


def test_a_spread_is_median_min_and_max_of_the_known_values():
    assert spread([3.0, 1.0, 2.0]) == Spread(2.0, 1.0, 3.0)
    assert spread([4.0, None, 1.0]) == Spread(2.5, 1.0, 4.0)
    assert spread([None]) is None


def _run(crawler, rate, cpu, missing):
    return {
        "crawler": crawler,
        "pages_per_second": rate,
        "cpu_ms_per_response": cpu,
        "peak_rss_mb": 100.0,
        "responses": 1000,
        "html_pages": 900,
        "non_html": 100,
        "missing": missing,
        "extra": 0,
    }


def test_the_summary_takes_medians_over_rounds_and_divides_by_plains():
    runs = [
        _run("frontier", 50.0, 14.0, 0),
        _run("plain", 40.0, 12.0, 2),
        _run("frontier", 70.0, 13.0, 0),
        _run("plain", 80.0, 11.0, 4),
        _run("frontier", 60.0, 15.0, 1),
        _run("plain", 60.0, 13.0, 3),
        _run("wget", 500.0, 1.5, 0),
    ]
    rows = {row["crawler"]: row for row in summarize(runs)}
    assert rows["frontier"]["pages_per_second"] == Spread(60.0, 50.0, 70.0)
    assert rows["frontier"]["cpu_ms_per_response"] == Spread(14.0, 13.0, 15.0)
    assert rows["plain"]["missing"] == Spread(3, 2, 4)
    assert rows["frontier"]["rounds"] == 3
    assert rows["frontier"]["ratio_to_plain"] == pytest.approx(1.0)
    # Only the frontier crawls are compared with plain.
    assert rows["plain"]["ratio_to_plain"] is None
    assert rows["wget"]["ratio_to_plain"] is None


def test_without_plain_there_is_no_ratio():
    rows = summarize([_run("frontier", 50.0, 14.0, 0)])
    assert rows[0]["ratio_to_plain"] is None


def test_the_table_shows_median_and_range_or_one_value():
    runs = [_run("frontier", 50.0, 14.0, 0), _run("frontier", 70.0, 14.0, 0)]
    text = summary_table(summarize(runs))
    assert "60.0 (50.0..70.0)" in text
    assert "14.00 |" in text  # the same in every round: one value
    assert "n/a" in text  # no plain crawl: no ratio


def test_each_corpus_gets_its_own_address_and_only_the_first_gzip(tmp_path):
    corpora = [Corpus("python", tmp_path / "py"), Corpus("sqlite", tmp_path / "sq")]
    sites = plan_sites(corpora, tmp_path, 8931)
    assert [site.root_url for site in sites] == [
        "http://127.0.0.31:8931/",
        "http://127.0.0.32:8931/",
    ]
    assert [site.gzip for site in sites] == [True, False]
    config = nginx_config(sites, tmp_path)
    assert "daemon off;" in config
    assert "worker_processes 1;" in config
    assert f"pid {tmp_path / 'nginx.pid'};" in config
    assert config.count("gzip on;") == 1
    assert config.count("gzip off;") == 1
    assert f"access_log {tmp_path / 'sqlite.access.log'} realsites;" in config
    assert "$status" in config
    assert "$request_uri" in config
    assert "$sent_http_content_type" in config
