"""Hygiene: every stats key crawler/ writes is documented in the README's stats table."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import crawler

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

CRAWLER_DIR = Path(crawler.__file__).parent
README = CRAWLER_DIR.parent / "README.md"
# OnceLogger.event(key, ...) adds to a stats key too: its callers' keys are read.
STATS_METHODS = frozenset({"inc_value", "set_value", "max_value", "min_value", "event"})
# Modules that only pass on a key their callers name (read at those calls instead).
FORWARDERS = frozenset({Path("crawler/context/logonce.py")})
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


@dataclass(frozen=True, order=True)
class StatsKey:
    """A key written to stats; *family* keys are a prefix such as ``x/y_count/``."""

    text: str
    family: bool = False


def _key_of(node: ast.expr) -> StatsKey | None:
    """The key a literal or f-string spells; None for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return StatsKey(node.value)
    if not isinstance(node, ast.JoinedStr):
        return None
    prefix = ""
    for part in node.values:
        if not (isinstance(part, ast.Constant) and isinstance(part.value, str)):
            return StatsKey(prefix, family=True)
        prefix += part.value
    return StatsKey(prefix)


def _own_nodes(scope: ast.AST) -> Iterator[ast.AST]:
    """The nodes of *scope* that are not inside a nested function or class."""
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _SCOPES):
            stack.extend(ast.iter_child_nodes(node))


def _bindings(scope: ast.AST) -> dict[str, list[StatsKey | None]]:
    """Name -> keys bound to it in *scope*: ``for n in ("a", "b")`` or ``n = "a"``."""
    bound: dict[str, list[StatsKey | None]] = {}
    for node in _own_nodes(scope):
        if isinstance(node, ast.For) and isinstance(node.target, ast.Name):
            values = (
                node.iter.elts if isinstance(node.iter, ast.Tuple | ast.List) else []
            )
            keys = [_key_of(value) for value in values] or [None]
            bound.setdefault(node.target.id, []).extend(keys)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                bound.setdefault(target.id, []).append(_key_of(node.value))
    return bound


def stats_keys(source: str) -> tuple[set[StatsKey], list[int]]:
    """Keys *source* writes to stats, and the lines whose key cannot be read off."""
    tree = ast.parse(source)
    keys: set[StatsKey] = set()
    unreadable: list[int] = []
    scopes = [tree, *(n for n in ast.walk(tree) if isinstance(n, _SCOPES))]
    for scope in scopes:
        bound = _bindings(scope)
        for node in _own_nodes(scope):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in STATS_METHODS
                and node.args
            ):
                continue
            argument = node.args[0]
            found = [_key_of(argument)]
            if isinstance(argument, ast.Name):
                found = bound.get(argument.id, [None])
            if None in found:
                unreadable.append(node.lineno)
            keys.update(key for key in found if key is not None)
    return keys, sorted(unreadable)


def stats_keys_in_crawler() -> tuple[set[StatsKey], list[str]]:
    keys: set[StatsKey] = set()
    unreadable: list[str] = []
    for path in sorted(CRAWLER_DIR.rglob("*.py")):
        found, lines = stats_keys(path.read_text(encoding="utf-8"))
        keys |= found
        where = path.relative_to(CRAWLER_DIR.parent)
        if where not in FORWARDERS:
            unreadable += [f"{where}:{line}" for line in lines]
    return keys, unreadable


def undocumented_stats(readme: Path, keys: Iterable[StatsKey]) -> list[str]:
    """Keys not in backticks in *readme*; a family needs a span that extends it."""
    spans = set(re.findall(r"`([^`\n]+)`", readme.read_text(encoding="utf-8")))
    missing = []
    for key in sorted(keys):
        if key.family:
            documented = any(
                span.startswith(key.text) and len(span) > len(key.text)
                for span in spans
            )
        else:
            documented = key.text in spans
        if not documented:
            missing.append(key.text + ("{...}" if key.family else ""))
    return missing


@pytest.mark.parametrize(
    ("source", "keys"),
    [
        ("stats.inc_value('a/b')", {StatsKey("a/b")}),
        ("self._stats.inc_value('a/b', 3)", {StatsKey("a/b")}),
        ("crawler.stats.set_value('a/c', 1)", {StatsKey("a/c")}),
        ("stats.max_value('a/d', 2.5)", {StatsKey("a/d")}),
        ("stats.min_value('a/e', 0)", {StatsKey("a/e")}),
        (
            "stats.inc_value(f'frontier/dropped_reason_count/{reason}')",
            {StatsKey("frontier/dropped_reason_count/", family=True)},
        ),
        (
            "stats.inc_value(f'robots/status_count/{stats_value(s)}', 2)",
            {StatsKey("robots/status_count/", family=True)},
        ),
        ("stats.inc_value(f'plain/fstring')", {StatsKey("plain/fstring")}),
        (
            (
                "def f(stats):\n    for key in ('x/one', 'x/two'):\n"
                "        stats.inc_value(key)\n"
            ),
            {StatsKey("x/one"), StatsKey("x/two")},
        ),
        (
            "def f(stats):\n    key = 'y/z'\n    stats.inc_value(key)\n",
            {StatsKey("y/z")},
        ),
        ("once.event('a/f', 'msg %s', arg)", {StatsKey("a/f")}),
        ("stats.get_value('not/written')", set()),
        ("stats.inc_value()", set()),
    ],
)
def test_stats_keys_are_read_off_the_source(source: str, keys: set[StatsKey]) -> None:
    assert stats_keys(source) == (keys, [])


@pytest.mark.parametrize(
    "source",
    [
        "stats.inc_value(make_key())",
        "stats.inc_value('a' + b)",
        "def f(stats, key):\n    stats.inc_value(key)\n",
        "def f(stats, keys):\n    for key in keys:\n        stats.inc_value(key)\n",
        "key = 'outer'\ndef f(stats):\n    stats.inc_value(key)\n",
    ],
)
def test_key_that_cannot_be_read_off_is_reported(source: str) -> None:
    assert stats_keys(source)[1] != []


def test_keys_are_found_in_the_project() -> None:
    """The control: keys known to be written in crawler/ are found."""
    keys, _ = stats_keys_in_crawler()
    assert StatsKey("frontier/acked") in keys
    assert StatsKey("scheduler/enqueued") in keys  # written through a loop variable
    assert StatsKey("warc/errors") in keys  # written through OnceLogger.event


def test_every_stats_key_is_a_literal() -> None:
    _, unreadable = stats_keys_in_crawler()
    assert unreadable == [], "stats keys must be literals or f-string families"


README_KEYS = [
    StatsKey("frontier/acked"),
    StatsKey("scheduler/enqueued"),
    StatsKey("frontier/dropped_reason_count/", family=True),
]


@pytest.mark.parametrize(
    ("text", "missing"),
    [
        (
            (
                "| `frontier/acked` | x |\n| `scheduler/enqueued`, `a` | y |\n"
                "| `frontier/dropped_reason_count/{depth\\|trap}` | z |\n"
            ),
            [],
        ),
        (
            "`frontier/acked` `scheduler/enqueued` `frontier/dropped_reason_count/{r}`",
            [],
        ),
        (
            (
                "`frontier/acked` and scheduler/enqueued without backticks, "
                "`frontier/dropped_reason_count/{reason}`"
            ),
            ["scheduler/enqueued"],
        ),
        (
            (
                "`frontier/acked_total` `scheduler/enqueued/redis` "
                "`frontier/dropped_reason_count/`"
            ),
            [
                "frontier/acked",
                "frontier/dropped_reason_count/{...}",
                "scheduler/enqueued",
            ],
        ),
        (
            "",
            [
                "frontier/acked",
                "frontier/dropped_reason_count/{...}",
                "scheduler/enqueued",
            ],
        ),
    ],
)
def test_undocumented_stats_are_reported(
    tmp_path: Path, text: str, missing: list[str]
) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(text, encoding="utf-8")
    assert undocumented_stats(readme, README_KEYS) == missing


def test_every_stats_key_is_in_the_readme() -> None:
    if not README.exists():
        pytest.fail(f"{README} does not exist: the stats table lives there")
    keys, _ = stats_keys_in_crawler()
    assert undocumented_stats(README, keys) == []
