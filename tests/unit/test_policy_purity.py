"""Hygiene: crawler/policy/ stays pure (no Scrapy, Twisted, Redis, clock or RNG)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import crawler.policy

POLICY_DIR = Path(crawler.policy.__file__).parent
FORBIDDEN = frozenset(
    {"scrapy", "twisted", "redis", "time", "socket", "asyncio", "random"}
)


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _dynamic_import(node: ast.Call) -> str | None:
    """The module named by ``__import__("x")`` or ``importlib.import_module("x")``."""
    function = node.func
    name = function.id if isinstance(function, ast.Name) else None
    if isinstance(function, ast.Attribute):
        name = function.attr
    if name not in ("__import__", "import_module") or not node.args:
        return None
    first = node.args[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        return first.value
    return None


class _ImportCollector(ast.NodeVisitor):
    """Every module imported at run time: anywhere but an ``if TYPE_CHECKING:`` body."""

    def __init__(self) -> None:
        self.found: list[tuple[int, str]] = []

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node.test):
            self.visit(node.test)
            for statement in node.orelse:
                self.visit(statement)
        else:
            self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        self.found += [(node.lineno, alias.name) for alias in node.names]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level == 0 and node.module:
            self.found.append((node.lineno, node.module))

    def visit_Call(self, node: ast.Call) -> None:
        module = _dynamic_import(node)
        if module:
            self.found.append((node.lineno, module))
        self.generic_visit(node)


def runtime_imports(source: str) -> list[tuple[int, str]]:
    collector = _ImportCollector()
    collector.visit(ast.parse(source))
    return collector.found


def forbidden_imports(source: str) -> list[tuple[int, str]]:
    """(line, module) of each run-time import of a forbidden package."""
    return [
        (line, module)
        for line, module in runtime_imports(source)
        if module.split(".")[0] in FORBIDDEN
    ]


def policy_modules() -> list[Path]:
    return sorted(POLICY_DIR.glob("*.py"))


def test_policy_modules_are_found() -> None:
    names = {path.stem for path in policy_modules()}
    assert {"hosts", "order", "politeness", "scope", "sharding"} <= names


@pytest.mark.parametrize("path", policy_modules(), ids=lambda path: path.name)
def test_policy_module_imports_nothing_impure(path: Path) -> None:
    assert forbidden_imports(path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("path", policy_modules(), ids=lambda path: path.name)
def test_policy_module_depends_only_on_policy(path: Path) -> None:
    ours = [
        module
        for _, module in runtime_imports(path.read_text(encoding="utf-8"))
        if module.split(".")[0] == "crawler"
    ]
    assert [m for m in ours if not m.startswith("crawler.policy")] == []


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("import time\n", [(1, "time")]),
        ("import time as clock\n", [(1, "time")]),
        ("from time import monotonic\n", [(1, "time")]),
        ("import os, socket\n", [(1, "socket")]),
        ("x = 1\ndef f():\n    import random\n", [(3, "random")]),
        ("class C:\n    def m(self):\n        import asyncio\n", [(3, "asyncio")]),
        ("from twisted.internet import reactor\n", [(1, "twisted.internet")]),
        ("import redis.asyncio\n", [(1, "redis.asyncio")]),
        ("try:\n    import scrapy\nexcept ImportError:\n    pass\n", [(2, "scrapy")]),
        (
            "if TYPE_CHECKING:\n    pass\nelse:\n    import redis\n",
            [(4, "redis")],
        ),
        ("if DEBUG:\n    import time\n", [(2, "time")]),
        ("m = __import__('asyncio')\n", [(1, "asyncio")]),
        (
            "import importlib\nimportlib.import_module('scrapy.http')\n",
            [(2, "scrapy.http")],
        ),
        ("if TYPE_CHECKING:\n    import scrapy\n", []),
        (
            (
                "import typing\nif typing.TYPE_CHECKING:\n"
                "    from scrapy.settings import BaseSettings\n"
            ),
            [],
        ),
        ("import timeit\nimport datetime\nimport randomness\n", []),
        ("from . import time\n", []),
        ("from __future__ import annotations\nimport math\n", []),
    ],
)
def test_checker_reports_runtime_imports(
    source: str, found: list[tuple[int, str]]
) -> None:
    assert forbidden_imports(source) == found
