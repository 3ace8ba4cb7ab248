"""Several ``scrapy crawl`` nodes of one crawl, run to their end (bounded)."""

from __future__ import annotations

import subprocess
from typing import TYPE_CHECKING

from tests.integration.test_node_failures import scrapy_crawl
from tests.servers import ROOT

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path


def run_nodes(
    labels: Sequence[str],
    settings: Sequence[str],
    *,
    seeds: str,
    tmp_path: Path,
    timeout: float,
    spider_args: Sequence[str] = ("-a", "scope=seed-hosts"),
) -> tuple[list[int], list[str]]:
    """Start one node a label (``FRONTIER_NODE_NAME``) with *settings* and *seeds*,
    all at once, and wait for every one (each killed past *timeout* seconds): their
    exit statuses and logs, in *labels*' order."""
    logs, processes = [], []
    for label in labels:
        command = scrapy_crawl(*settings, f"FRONTIER_NODE_NAME={label}", seeds=seeds)
        log_path = tmp_path / f"{label}.log"
        logs.append(log_path)
        with log_path.open("wb") as log:
            processes.append(
                subprocess.Popen(
                    [*command, *spider_args],
                    cwd=ROOT,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            )
    try:
        codes = [process.wait(timeout=timeout) for process in processes]
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
    return codes, [path.read_text("utf-8", "replace") for path in logs]
