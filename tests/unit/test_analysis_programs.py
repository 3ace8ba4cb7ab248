"""External programs as analyzers (crawler/analysis/programs.py): the ANALYZERS
setting checked, templates substituted literally, real programs run. No Redis."""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import pytest

from crawler.analysis.analysisconfig import AnalysisConfig, parse_analyzers
from crawler.analysis.loader import AnalyzerLoader
from crawler.analysis.programs import (
    MAX_OUTPUT,
    ProgramAnalyzer,
    ProgramFailedError,
    ProgramSpec,
    RawOutput,
    substituted,
)
from crawler.analysis.tasks import BadTaskError
from tests.unit.test_analyzers import project_settings

# A program that prints its arguments as a JSON list (one line) on stdout.
ARGS_SCRIPT = "import json, sys; print(json.dumps(sys.argv[1:]))"
HOSTILE_URL = "http://x/{page}?a=1;rm -rf / $(id) `id` | cat > /tmp/x && {result}"


def program(*argv: str, timeout: float = 10.0) -> ProgramAnalyzer:
    return ProgramAnalyzer(ProgramSpec(tuple(argv), timeout))


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ({"p": {"argv": []}}, "argv must be a non-empty list"),
        ({"p": {"argv": "wc {page}"}}, "argv must be a non-empty list"),
        ({"p": {"argv": ["wc", 3]}}, "argv must be a non-empty list"),
        ({"p": {"argv": [""]}}, "argv must be a non-empty list"),
        ({"p": {}}, "argv must be a non-empty list"),
        ({"p": {"argv": ["wc", "{pages}"]}}, r"unknown template \{pages\}"),
        ({"p": {"argv": ["wc", "--x={PAGE}"]}}, r"unknown template \{PAGE\}"),
        ({"p": {"argv": ["wc"], "timeout": 0}}, "timeout must be positive"),
        ({"p": {"argv": ["wc"], "timeout": -1}}, "timeout must be positive"),
        ({"p": {"argv": ["wc"], "timeout": "60"}}, "timeout must be positive"),
        ({"p": {"argv": ["wc"], "timeout": True}}, "timeout must be positive"),
        ({"p": {"argv": ["wc"], "timeout": float("inf")}}, "timeout must be pos"),
        ({"p": {"argv": ["wc"], "shell": True}}, "unknown keys"),
        ({"p": "NotDotted"}, "dotted class path"),
        ({"p": 3}, "dotted class path"),
        ({"": "a.B"}, "is not a name"),
    ],
)
def test_a_bad_analyzers_spec_is_refused_in_one_line_naming_analyzers(value, error):
    with pytest.raises(ValueError, match=error) as raised:
        AnalysisConfig.from_settings(project_settings(ANALYZERS=value))
    assert "ANALYZERS" in str(raised.value)
    assert "\n" not in str(raised.value)


def test_good_analyzers_specs_are_read():
    analyzers = parse_analyzers(
        {
            "wc": {"argv": ["/usr/bin/wc", "-c", "{page}"], "timeout": 5},
            "text": "crawler.analysis.analyzers.TextAnalyzer",
            "plain": {"argv": ["prog", "--type={type}", "{url}", "{result}"]},
        }
    )
    assert analyzers["wc"] == ProgramSpec(("/usr/bin/wc", "-c", "{page}"), 5.0)
    assert analyzers["text"] == "crawler.analysis.analyzers.TextAnalyzer"
    assert analyzers["plain"].timeout == 60.0  # type: ignore[union-attr]


def test_analyzers_from_the_command_line_is_json():
    value = '{"wc": {"argv": ["wc", "{page}"], "timeout": 2}}'
    config = AnalysisConfig.from_settings(project_settings(ANALYZERS=value))
    assert config.analyzers == {"wc": ProgramSpec(("wc", "{page}"), 2.0)}


def test_templates_are_replaced_once_each_hostile_value_one_literal_argument():
    argv = ("prog", "{page}", "--url={url}", "{type}", "{result}", "{{page}}", "{x")
    values = {"page": "/t/page", "result": "/t/r", "url": HOSTILE_URL, "type": "{url}"}
    assert substituted(argv, values) == [
        "prog",
        "/t/page",
        f"--url={HOSTILE_URL}",
        "{url}",
        "/t/r",
        "{/t/page}",
        "{x",
    ]


def test_a_program_gets_hostile_values_as_literal_arguments(tmp_path):
    canary = tmp_path / "canary"
    url = f"http://x/;touch {canary};$(touch {canary})`touch {canary}`{{page}}"
    analyzer = program(sys.executable, "-c", ARGS_SCRIPT, "{url}", "{type}")
    result = analyzer.analyze(b"page", {"url": url, "content_type": "a'b\"c"})
    assert result == RawOutput(json.dumps([url, "a'b\"c"]).encode() + b"\n")
    assert not canary.exists()


def test_a_program_reads_the_page_and_writes_its_result_file(tmp_path):
    script = tmp_path / "count.py"
    script.write_text(
        "import json, sys\n"
        "page = open(sys.argv[1], 'rb').read()\n"
        "json.dump({'bytes': len(page), 'url': sys.argv[3]}, open(sys.argv[2], 'w'))\n"
        "print('not the result')\n"
    )
    analyzer = program(sys.executable, str(script), "{page}", "{result}", "{url}")
    result = analyzer.analyze(b"12345", {"url": "http://x/"})
    assert result == {"bytes": 5, "url": "http://x/"}


def test_without_a_result_file_the_output_is_the_result():
    output = program("/usr/bin/wc", "-c", "{page}").analyze(b"abc", {})
    assert isinstance(output, RawOutput)
    assert output.body.startswith(b"3 ")
    assert output.body.endswith(b"/page\n")


def test_a_json_object_on_stdout_is_the_result_anything_else_is_raw():
    echo = "import sys; sys.stdout.write(sys.argv[1])"
    analyzer = program(sys.executable, "-c", echo, "{url}")
    assert analyzer.analyze(b"", {"url": '{"a": [1]}'}) == {"a": [1]}
    assert analyzer.analyze(b"", {"url": "[1, 2]"}) == RawOutput(b"[1, 2]")
    assert analyzer.analyze(b"", {"url": "plain"}) == RawOutput(b"plain")


def test_a_program_exiting_non_zero_fails_with_its_error_output():
    fail = "import sys; sys.stderr.write('bad page\\n'); sys.exit(3)"
    with pytest.raises(ProgramFailedError, match="exited with 3: bad page"):
        program(sys.executable, "-c", fail).analyze(b"", {})


def test_a_program_past_its_timeout_is_killed_with_its_children(tmp_path):
    marker = tmp_path / "child-alive"
    child = tmp_path / "child.py"
    child.write_text(
        f"import pathlib, time\ntime.sleep(1.5)\npathlib.Path({str(marker)!r}).touch()\n"
    )
    parent = tmp_path / "parent.py"
    parent.write_text(
        "import subprocess, sys, time\n"
        f"subprocess.Popen([sys.executable, {str(child)!r}])\n"
        "time.sleep(30)\n"
    )
    started = time.monotonic()
    with pytest.raises(ProgramFailedError, match=r"past its timeout of 0\.5 s"):
        program(sys.executable, str(parent), timeout=0.5).analyze(b"", {})
    assert time.monotonic() - started < 5
    time.sleep(2.0)
    assert not marker.exists()  # the grandchild was killed with the group


def test_a_program_not_found_fails_with_os_error():
    with pytest.raises(FileNotFoundError):
        program("/nonexistent/analyzer", "{page}").analyze(b"", {})


def test_the_temporary_files_are_deleted_afterwards():
    before = set(Path(tempfile.gettempdir()).glob("analysis-*"))
    show = "import sys; print(sys.argv[1])"
    output = program(sys.executable, "-c", show, "{page}").analyze(b"secret", {})
    assert isinstance(output, RawOutput)
    page = Path(output.body.decode().strip())
    assert page.name == "page"
    assert not page.exists()
    assert not page.parent.exists()
    assert set(Path(tempfile.gettempdir()).glob("analysis-*")) == before


def test_too_much_output_fails_the_attempt():
    flood = f"import sys; sys.stdout.write('x' * {MAX_OUTPUT + 1})"
    with pytest.raises(ProgramFailedError, match=f"longer than {MAX_OUTPUT} bytes"):
        program(sys.executable, "-c", flood).analyze(b"", {})


def test_the_loader_finds_programs_and_classes_by_analyzers_name():
    named = parse_analyzers(
        {"wc": {"argv": ["wc"]}, "text": "crawler.analysis.analyzers.TextAnalyzer"}
    )
    loader = AnalyzerLoader([], named)
    assert isinstance(loader.get("wc"), ProgramAnalyzer)
    assert loader.get("wc") is loader.get("wc")
    assert type(loader.get("text")).__name__ == "TextAnalyzer"
    with pytest.raises(BadTaskError, match="neither in ANALYZERS nor a dotted path"):
        loader.get("cat")
