"""Analysis tasks: the fields of a stream entry, checked as hostile input.

A task is a Redis Stream entry of flat string fields (never pickle):

- ``v``: the format version, ``"2"`` (``"1"`` tasks, without ``page`` and
  ``content_type``, are still read);
- ``url``: the page's URL;
- ``store_path``: the stored page's key, relative to ``PAGESTORE_URL``;
- ``page`` (v2): the page's full storage address (``s3://bucket/prefix/<key>`` or
  ``file:///root/<key>``): a worker refuses a task whose page is not ``store_path``
  in its own page store;
- ``content_type`` (v2): the page's Content-Type;
- ``record``: the page's record as JSON (a ``PageRecord`` without its body);
- ``analyzer``: an ``ANALYZERS`` name or the dotted path of an analyzer class;
- ``attempts``: how many times the task failed before this entry was added;
- ``result_path`` (optional): the result's key, relative to the results store;
  by default ``<store_path>.analysis.json``;
- ``error`` (optional): the last failure, on a retried task.

Keys are checked by ``crawler.storage.address.check_key`` as a task is read: a key
that could leave its store makes the task a bad one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from crawler.storage.address import check_key
from crawler.storage.errors import UnsafePathError

# The consumer group every `scrapy analyze` worker of a crawl reads in.
GROUP = "analyzers"
VERSION = "2"
# Versions a worker reads (version 1 has no page nor content_type).
READ_VERSIONS = ("1", VERSION)
# What a result file's name adds to its page's.
RESULT_SUFFIX = ".analysis.json"
# Longest field accepted from a task (a page's record is a few KB).
MAX_FIELD = 1 << 20
# Longest error text kept in a task or a dead letter.
MAX_ERROR = 2000
_REQUIRED = ("v", "url", "store_path", "record", "analyzer", "attempts")
# Fields a version requires besides _REQUIRED.
_REQUIRED_IN = {"1": (), "2": ("page", "content_type")}


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
    page: str = ""  # empty in a version-1 task
    content_type: str = ""

    def to_fields(self) -> dict[str, str]:
        """The stream entry's fields."""
        fields = {
            "v": VERSION,
            "url": self.url,
            "store_path": self.store_path,
            "page": self.page,
            "content_type": self.content_type,
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
        if missing := [name for name in _REQUIRED if name not in fields]:
            raise BadTaskError(f"missing fields {missing}")
        if (version := fields["v"]) not in READ_VERSIONS:
            raise BadTaskError(f"unknown version {version[:20]!r}")
        if missing := [name for name in _REQUIRED_IN[version] if name not in fields]:
            raise BadTaskError(f"missing fields {missing}")
        try:
            record = json.loads(fields["record"])
            attempts = int(fields["attempts"])
        except ValueError as exc:
            raise BadTaskError(f"bad record or attempts: {exc}") from None
        if not isinstance(record, dict) or not 0 <= attempts < 1000:
            raise BadTaskError("record must be a JSON object, attempts 0..999")
        task = cls(
            url=fields["url"],
            store_path=fields["store_path"],
            record=record,
            analyzer=fields["analyzer"],
            attempts=attempts,
            result_path=fields.get("result_path", ""),
            error=fields.get("error", ""),
            page=fields.get("page", ""),
            content_type=fields.get("content_type", ""),
        )
        task.check_keys()
        return task

    @property
    def result_key(self) -> str:
        """The result's key in the results store."""
        return self.result_path or self.store_path + RESULT_SUFFIX

    def check_keys(self) -> None:
        """``BadTaskError`` unless the page's and the result's keys are safe
        relative paths (``check_key``)."""
        try:
            check_key(self.store_path)
            check_key(self.result_key)
        except UnsafePathError as exc:
            raise BadTaskError(str(exc)) from None

    def analyzed_record(self) -> dict[str, Any]:
        """The record an analyzer is given: the task's, with the task's
        Content-Type when the record has none."""
        if self.content_type and not self.record.get("content_type"):
            return {**self.record, "content_type": self.content_type}
        return self.record


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
