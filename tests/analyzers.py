"""Analyzers (loaded by dotted path) and a stand-in page store for analysis tests."""

from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping


# Set in a worker's environment: BlockingAnalyzer writes <dir>/started and hangs.
BLOCK_ENV = "ANALYSIS_TEST_BLOCK"
# Calls of each analyzer by URL, in this process.
CALLS: Counter[tuple[str, str]] = Counter()


class EchoAnalyzer:
    def analyze(self, page: bytes, record: Mapping[str, Any]) -> dict[str, Any]:
        CALLS["echo", record["url"]] += 1
        return {"length": len(page), "pid": os.getpid()}


class FlakyAnalyzer:
    """Fails the first two times it sees a URL, then succeeds."""

    def analyze(self, page: bytes, record: Mapping[str, Any]) -> dict[str, Any]:
        CALLS["flaky", record["url"]] += 1
        if CALLS["flaky", record["url"]] <= 2:
            raise RuntimeError(f"flaky failure {CALLS['flaky', record['url']]}")
        return {"length": len(page)}


class FailingAnalyzer:
    def analyze(self, page: bytes, record: Mapping[str, Any]) -> dict[str, Any]:
        CALLS["failing", record["url"]] += 1
        raise RuntimeError("this analyzer always fails")


class BlockingAnalyzer:
    """Hangs (until killed) where BLOCK_ENV is set; else answers with its pid."""

    def analyze(self, page: bytes, record: Mapping[str, Any]) -> dict[str, Any]:
        if directory := os.environ.get(BLOCK_ENV):
            (Path(directory) / "started").write_text(str(os.getpid()))
            time.sleep(3600)
        return {"finished_by": os.getpid()}


class BadResultAnalyzer:
    def analyze(self, page: bytes, record: Mapping[str, Any]) -> Any:
        return ["not", "a", "dict"]


class NotAnAnalyzer:
    pass


not_a_class = EchoAnalyzer()
