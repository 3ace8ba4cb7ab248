"""The shipped analyzers, the analyzer loader, task fields and the config: no Redis."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from scrapy.settings import Settings

import crawler.defaults as project
from crawler.analysis.analysisconfig import AnalysisConfig
from crawler.analysis.analyzers import MAX_TEXT, OutlinksAnalyzer, TextAnalyzer
from crawler.analysis.loader import AnalyzerLoader
from crawler.analysis.pipeline import analysis_rules
from crawler.analysis.tasks import AnalysisTask, BadTaskError
from crawler.storage import s3
from crawler.storage.address import StoreAddress
from crawler.storage.stores import STORE_SETTINGS
from tests.site import SiteSpec, links_of, page_html, url_of

PAGE = b"""<!DOCTYPE html><html><head><title> A  page </title>
<style>p {color: red}</style><script>var hidden = 1;</script></head>
<body><header>Site header</header><nav><a href="/menu">Menu</a></nav>
<main><h1>Main title</h1><p>First   paragraph.</p><h2>Part <em>two</em></h2>
<p>Second paragraph.</p><h6>Small</h6>
<a href="/same">same host</a><a href="page.html">relative</a>
<a href="https://www.example.co.uk/a">ext 1</a><a href="https://cdn.example.co.uk/b">ext 2</a>
<a href="http://other.test:8080/">ext 3</a><a href="mailto:me@x.test">mail</a>
<a href="javascript:void(0)">js</a><a href="http://[bad">bad</a></main>
<footer>Copyright</footer></body></html>"""
RECORD = {"url": "http://host.test/dir/index.html", "content_type": "text/html"}


def test_text_analyzer_extracts_title_headings_and_main_text():
    result = TextAnalyzer().analyze(PAGE, RECORD)
    assert result["title"] == "A page"
    assert result["headings"] == [
        {"level": 1, "text": "Main title"},
        {"level": 2, "text": "Part two"},
        {"level": 6, "text": "Small"},
    ]
    text = result["text"]
    assert text.startswith("Main title First paragraph. Part two Second paragraph.")
    for left_out in ("hidden", "color", "Site header", "Menu", "Copyright"):
        assert left_out not in text
    assert result["words"] == len(text.split())
    assert result["text_truncated"] is False


@pytest.mark.parametrize(
    ("page", "content_type", "title", "text"),
    [
        (b"", None, None, ""),
        (b"plain words", "text/plain", None, "plain words"),
        (b"<p>no body tag", None, None, "no body tag"),
        (
            "<title>café</title>".encode("latin-1"),
            "text/html; charset=latin-1",
            "café",
            "",
        ),
        ("<meta charset=utf-8><title>日本</title>".encode(), None, "日本", ""),
        (b"\x00\xff<title>x</title>\xfe", None, "x", None),
    ],
)
def test_text_analyzer_takes_any_bytes(page, content_type, title, text):
    result = TextAnalyzer().analyze(page, {"content_type": content_type})
    assert result["title"] == title
    if text is not None:
        assert result["text"] == text


def test_text_analyzer_cuts_long_text():
    page = b"<body>" + b"word " * (MAX_TEXT // 4) + b"</body>"
    result = TextAnalyzer().analyze(page, {})
    assert len(result["text"]) == MAX_TEXT
    assert result["text_truncated"] is True


def test_outlinks_analyzer_counts_internal_external_and_other_links():
    result = OutlinksAnalyzer().analyze(PAGE, RECORD)
    assert result == {
        "links": 9,
        "internal": 3,  # /menu, /same, page.html
        "external": 3,
        "other": 3,  # mailto, javascript, an unparsable URL
        "external_domains": 2,
        "top_external_domains": [
            {"domain": "example.co.uk", "links": 2},
            {"domain": "other.test", "links": 1},
        ],
    }


def test_outlinks_analyzer_follows_the_base_element():
    page = b'<base href="http://cdn.test/"><a href="x">x</a><a href="http://host.test/">h</a>'
    result = OutlinksAnalyzer().analyze(page, {"url": "http://host.test/"})
    assert (result["internal"], result["external"]) == (1, 1)


def test_analyzers_on_a_page_of_the_test_site():
    spec = SiteSpec(hosts=4, pages=30, links=5, cross=0.2, seed=1, port=8000)
    page = page_html(spec, 1, 3, "some filler text").encode()
    record = {"url": url_of(spec, 1, 3), "content_type": "text/html; charset=utf-8"}
    text = TextAnalyzer().analyze(page, record)
    assert text["title"] == "host 1 page 3"
    assert text["headings"] == [{"level": 1, "text": "host 1 page 3"}]
    assert text["text"].endswith("some filler text")
    links = links_of(spec, 1, 3)
    outlinks = OutlinksAnalyzer().analyze(page, record)
    assert outlinks["links"] == len(links)
    assert outlinks["internal"] == sum(host == 1 for host, _page in links)
    assert outlinks["external"] == sum(host != 1 for host, _page in links)


@pytest.mark.parametrize(
    ("path", "error"),
    [
        ("os.system", "not in an allowed module"),
        ("crawler.analysis.analyzersX.Thing", "not in an allowed module"),
        ("crawler.analysis.analyzers.Missing", "analyze method"),
        ("crawler.analysis.analyzers.MAX_TEXT", "analyze method"),
        ("crawler.analysis.analyzers.Analyzer", "cannot be made"),
        ("tests.analyzers.NotAnAnalyzer", "analyze method"),
        ("tests.nothing_here.Analyzer", "does not import"),
        ("TextAnalyzer", "nor a dotted path"),
        ("a.b; import os", "nor a dotted path"),
        ("x." * 200 + "Y", "nor a dotted path"),
    ],
)
def test_the_loader_refuses_what_is_not_an_allowed_analyzer(path, error):
    with pytest.raises(BadTaskError, match=error):
        AnalyzerLoader(["tests.analyzers", "tests.nothing_here"]).get(path)


def test_the_loader_makes_one_instance_per_analyzer():
    loader = AnalyzerLoader([])
    analyzer = loader.get("crawler.analysis.analyzers.TextAnalyzer")
    assert isinstance(analyzer, TextAnalyzer)
    assert loader.get("crawler.analysis.analyzers.TextAnalyzer") is analyzer


def test_a_task_round_trips_through_its_fields():
    task = AnalysisTask(
        "http://x/",
        "x/1",
        {"url": "http://x/", "n": 1},
        "a.B",
        2,
        page="s3://bucket/p/x/1",
        content_type="text/html",
    )
    raw = {k.encode(): v.encode() for k, v in task.to_fields().items()}
    assert AnalysisTask.from_fields(raw) == task


@pytest.mark.parametrize(
    ("store_path", "result_path"),
    [
        ("", ""),
        ("/etc/passwd", ""),
        ("..", ""),
        ("../x", ""),
        ("a/../../x", ""),
        (".", ""),
        ("a//b", ""),
        ("a\\..\\b", ""),
        ("a\x00b", ""),
        ("page", "../result.json"),
        ("page", "/etc/result.json"),
    ],
)
def test_task_keys_that_could_leave_the_store_are_refused(store_path, result_path):
    task = AnalysisTask("http://x/", store_path, {}, "a.B", result_path=result_path)
    raw = {k.encode(): v.encode() for k, v in task.to_fields().items()}
    with pytest.raises(BadTaskError, match="not a safe relative path"):
        AnalysisTask.from_fields(raw)


def test_a_version_1_task_is_still_read():
    raw = {
        b"v": b"1",
        b"url": b"http://x/",
        b"store_path": b"http/x/index.html",
        b"record": b'{"content_type": "text/html"}',
        b"analyzer": b"a.B",
        b"attempts": b"1",
    }
    task = AnalysisTask.from_fields(raw)
    assert (task.store_path, task.page, task.attempts) == ("http/x/index.html", "", 1)
    assert task.result_key == "http/x/index.html.analysis.json"


def test_a_version_2_task_needs_its_page_and_content_type():
    task = AnalysisTask("http://x/", "k", {}, "a.B", page="s3://b/k", content_type="")
    fields = task.to_fields()
    assert fields["v"] == "2"
    del fields["page"]
    with pytest.raises(BadTaskError, match="missing fields"):
        AnalysisTask.from_fields({k.encode(): v.encode() for k, v in fields.items()})


def project_settings(**overrides: Any) -> Settings:
    values = {k: getattr(project, k) for k in dir(project) if k.isupper()}
    return Settings({**values, **overrides})


def test_the_project_defaults_make_a_valid_config():
    config = AnalysisConfig.from_settings(project_settings())
    assert config.max_attempts == 3
    assert config.page_store == StoreAddress.parse(
        project.PAGESTORE_URL, "PAGESTORE_URL"
    )
    assert config.results_store is None
    assert config.analyzers == {}


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("ANALYSIS_MAX_ATTEMPTS", 0),
        ("ANALYSIS_CLAIM_TIMEOUT", 0),
        ("ANALYSIS_ALERT", "ftp://x/"),
        ("ANALYSIS_STREAM_MAXLEN", 0),
        ("ANALYSIS_DEFAULT", ""),
        ("PAGESTORE_URL", ""),
        ("PAGESTORE_URL", "ftp://host/pages"),
        ("ANALYSIS_RESULTS_URL", "s3://Bad_Bucket/results"),
        ("ANALYZERS", "not json"),
        ("ANALYZERS", {"wc": 3}),
    ],
)
def test_a_bad_setting_is_named(name, value):
    with pytest.raises(ValueError, match=name):
        AnalysisConfig.from_settings(project_settings(**{name: value}))


def test_analysis_rules_are_checked_at_start():
    config = AnalysisConfig.from_settings(
        project_settings(ANALYZERS={"wc": {"argv": ["wc", "{page}"]}})
    )
    assert analysis_rules([(r"\.pdf$", "a.B")], config)[0][1] == "a.B"
    assert analysis_rules([(r"\.txt$", "wc")], config)[0][1] == "wc"
    for bad in (["x"], [("(", "a.B")], [(r"x", "NoDots")], [(r"x", 3)], 5):
        with pytest.raises(ValueError, match="analysis_rules"):
            analysis_rules(bad, config)


def test_analysis_default_may_name_an_analyzers_entry():
    settings = project_settings(
        ANALYZERS={"wc": {"argv": ["wc", "{page}"]}, "text": "my.mod.Text"},
        ANALYSIS_DEFAULT="wc",
    )
    config = AnalysisConfig.from_settings(settings)
    assert config.trusted_modules() == ("my.mod",)
    with pytest.raises(ValueError, match="ANALYSIS_DEFAULT"):
        AnalysisConfig.from_settings(project_settings(ANALYSIS_DEFAULT="nothing"))


def test_workers_are_handed_every_setting_the_s3_store_reads():
    """A spawned worker opens its stores from STORE_SETTINGS alone."""
    read = set(
        re.findall(r'"((?:AWS|STORAGE)_[A-Z_]+)"', Path(s3.__file__).read_text())
    )
    assert {"AWS_ENDPOINT_URL", "STORAGE_TIMEOUT"} <= read
    assert read <= set(STORE_SETTINGS)
