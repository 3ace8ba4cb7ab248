"""PageRecord: what the spider yields for every fetched page."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class PageRecord:
    url: str
    status: int
    depth: int
    title: str | None
    content_type: str | None
    length: int
    links: int
    fetched_at: str
