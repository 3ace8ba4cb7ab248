"""``ANALYSIS_*`` settings, read once into a frozen config."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from crawler.policy.typedsettings import get_float, get_int

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings


@dataclass(frozen=True, slots=True)
class AnalysisConfig:
    default_analyzer: str
    max_attempts: int
    claim_timeout: float
    alert_url: str
    stream_maxlen: int
    store_dir: Path

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> AnalysisConfig:
        store_dir = settings.get("PAGESTORE_URL") or ""
        if not store_dir:
            raise ValueError("PAGESTORE_URL must be set: analysis reads the page store")
        config = cls(
            default_analyzer=settings.get("ANALYSIS_DEFAULT") or "",
            max_attempts=get_int(settings, "ANALYSIS_MAX_ATTEMPTS", at_least=1),
            claim_timeout=get_float(
                settings, "ANALYSIS_CLAIM_TIMEOUT", above=0, note="seconds"
            ),
            alert_url=settings.get("ANALYSIS_ALERT") or "",
            stream_maxlen=get_int(settings, "ANALYSIS_STREAM_MAXLEN", at_least=1),
            store_dir=Path(store_dir),
        )
        config.check()
        return config

    def check(self) -> None:
        """Raise ``ValueError`` with one line naming the setting that is wrong
        (the numbers were checked as they were read)."""
        if not self.default_analyzer:
            raise ValueError("ANALYSIS_DEFAULT must name an analyzer class")
        if self.alert_url and urlsplit(self.alert_url).scheme not in ("http", "https"):
            raise ValueError(
                f"ANALYSIS_ALERT must be empty or an http(s) URL, got {self.alert_url!r}"
            )
