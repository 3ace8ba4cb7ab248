"""Analysis tasks: the fields of a stream entry, checked as hostile input.

A task is a Redis Stream entry of flat string fields (never pickle):

- ``v``: the format version, ``"1"``;
- ``url``: the page's URL;
- ``store_path``: the stored page, relative to ``PAGESTORE_URL``;
- ``record``: the page's record as JSON (a ``PageRecord`` without its body);
- ``analyzer``: the dotted path of the analyzer class;
- ``attempts``: how many times the task failed before this entry was added;
- ``result_path`` (optional): where the result goes, relative to ``PAGESTORE_URL``;
  by default ``<store_path>.analysis.json``;
- ``error`` (optional): the last failure, on a retried task.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The consumer group every `scrapy analyze` worker of a crawl reads in.
GROUP = "analyzers"
VERSION = "1"
# What a result file's name adds to its page's.
RESULT_SUFFIX = ".analysis.json"
# Longest field accepted from a task (a page's record is a few KB).
MAX_FIELD = 1 << 20
# Longest error text kept in a task or a dead letter.
MAX_ERROR = 2000
_REQUIRED = ("v", "url", "store_path", "record", "analyzer", "attempts")


class BadTaskError(ValueError):
    """A task this worker will never run: malformed, or reaching outside the store."""


@dataclass(frozen=True, slots=True)
class AnalysisTask:
    url: str
    store_path: str
    record: dict[str, Any]
    analyzer: str
    attempts: int = 0
    result_path: str = ""
    error: str = ""

    def to_fields(self) -> dict[str, str]:
        """The stream entry's fields."""
        fields = {
            "v": VERSION,
            "url": self.url,
            "store_path": self.store_path,
            "record": json.dumps(self.record, separators=(",", ":"), default=str),
            "analyzer": self.analyzer,
            "attempts": str(self.attempts),
        }
        if self.result_path:
            fields["result_path"] = self.result_path
        if self.error:
            fields["error"] = self.error
        return fields

    @classmethod
    def from_fields(cls, raw: dict[bytes, bytes] | None) -> AnalysisTask:
        """Parse a stream entry; raise ``BadTaskError`` saying what is wrong."""
        fields = text_fields(raw)
        missing = [name for name in _REQUIRED if name not in fields]
        if missing:
            raise BadTaskError(f"missing fields {missing}")
        if fields["v"] != VERSION:
            raise BadTaskError(f"unknown version {fields['v']!r}")
        try:
            record = json.loads(fields["record"])
            attempts = int(fields["attempts"])
        except ValueError as exc:
            raise BadTaskError(f"bad record or attempts: {exc}") from None
        if not isinstance(record, dict) or not 0 <= attempts < 1000:
            raise BadTaskError("record must be a JSON object, attempts 0..999")
        return cls(
            url=fields["url"],
            store_path=fields["store_path"],
            record=record,
            analyzer=fields["analyzer"],
            attempts=attempts,
            result_path=fields.get("result_path", ""),
            error=fields.get("error", ""),
        )

    def page_file(self, store_dir: Path) -> Path:
        """The stored page's file, checked to be inside *store_dir*."""
        return inside(store_dir, self.store_path)

    def result_file(self, store_dir: Path) -> Path:
        """Where the result goes, checked to be inside *store_dir*."""
        return inside(store_dir, self.result_path or self.store_path + RESULT_SUFFIX)


def text_fields(raw: dict[bytes, bytes] | None) -> dict[str, str]:
    """An entry's fields as text; raise ``BadTaskError`` for what is not UTF-8 or
    longer than MAX_FIELD."""
    if not raw:
        raise BadTaskError("empty or deleted entry")
    try:
        fields = {key.decode(): value.decode() for key, value in raw.items()}
    except UnicodeDecodeError as exc:
        raise BadTaskError(f"not UTF-8: {exc}") from None
    if any(len(value) > MAX_FIELD for value in fields.values()):
        raise BadTaskError(f"a field is longer than {MAX_FIELD} characters")
    return fields


def inside(root: Path, relative: str) -> Path:
    """*relative* resolved under *root* (symbolic links followed); raise
    ``BadTaskError`` when it is empty, absolute, or resolves outside *root*."""
    if not relative or Path(relative).is_absolute():
        raise BadTaskError(f"path {relative!r} is not relative to the page store")
    base = root.resolve()
    try:
        resolved = (base / relative).resolve()
    except (ValueError, OSError) as exc:  # a NUL byte, a symlink loop
        raise BadTaskError(f"path {relative!r}: {exc}") from None
    if resolved == base or not resolved.is_relative_to(base):
        raise BadTaskError(f"path {relative!r} leaves the page store")
    return resolved


def error_text(exc: BaseException) -> str:
    """``module.Class: message`` of *exc*, cut to MAX_ERROR."""
    return f"{type(exc).__module__}.{type(exc).__qualname__}: {exc}"[:MAX_ERROR]


def shown_fields(raw: dict[bytes, bytes] | None) -> dict[str, str]:
    """A hostile entry's fields, kept as text (undecodable bytes escaped, cut)."""
    return {
        key.decode("utf-8", "backslashreplace")[:100]: value.decode(
            "utf-8", "backslashreplace"
        )[:MAX_ERROR]
        for key, value in list((raw or {}).items())[:50]
    }
