"""``ANALYSIS_*`` and ``ANALYZERS`` settings, read once into a frozen config."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from crawler.analysis.loader import DOTTED, module_of
from crawler.analysis.programs import ProgramSpec
from crawler.policy.typedsettings import get_float, get_int
from crawler.storage.address import StoreAddress

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings


@dataclass(frozen=True, slots=True)
class AnalysisConfig:
    default_analyzer: str
    max_attempts: int
    claim_timeout: float
    alert_url: str
    stream_maxlen: int
    # Where pages are read (PAGESTORE_URL), and results written unless
    # results_store (ANALYSIS_RESULTS_URL) is set.
    page_store: StoreAddress
    results_store: StoreAddress | None = None
    # ANALYZERS: name -> dotted class path or external program.
    analyzers: dict[str, str | ProgramSpec] = field(default_factory=dict)

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> AnalysisConfig:
        page_store = settings.get("PAGESTORE_URL") or ""
        if not page_store:
            raise ValueError("PAGESTORE_URL must be set: analysis reads the page store")
        results = settings.get("ANALYSIS_RESULTS_URL") or ""
        config = cls(
            default_analyzer=settings.get("ANALYSIS_DEFAULT") or "",
            max_attempts=get_int(settings, "ANALYSIS_MAX_ATTEMPTS", at_least=1),
            claim_timeout=get_float(
                settings, "ANALYSIS_CLAIM_TIMEOUT", above=0, note="seconds"
            ),
            alert_url=settings.get("ANALYSIS_ALERT") or "",
            stream_maxlen=get_int(settings, "ANALYSIS_STREAM_MAXLEN", at_least=1),
            page_store=StoreAddress.parse(page_store, "PAGESTORE_URL"),
            results_store=(
                StoreAddress.parse(results, "ANALYSIS_RESULTS_URL") if results else None
            ),
            analyzers=parse_analyzers(_dict_setting(settings, "ANALYZERS")),
        )
        config.check()
        return config

    def check(self) -> None:
        """Raise ``ValueError`` with one line naming the setting that is wrong
        (the numbers and addresses were checked as they were read)."""
        if not self.names_analyzer(self.default_analyzer):
            raise ValueError(
                "ANALYSIS_DEFAULT must name an analyzer class or an ANALYZERS entry, "
                f"got {self.default_analyzer!r}"
            )
        if self.alert_url and urlsplit(self.alert_url).scheme not in ("http", "https"):
            raise ValueError(
                f"ANALYSIS_ALERT must be empty or an http(s) URL, got {self.alert_url!r}"
            )

    def names_analyzer(self, name: str) -> bool:
        """Whether *name* is an ANALYZERS entry or a dotted class path."""
        return name in self.analyzers or bool(DOTTED.fullmatch(name))

    def trusted_modules(self) -> tuple[str, ...]:
        """Modules the settings name analyzers in (ANALYSIS_DEFAULT, ANALYZERS):
        a worker may load them."""
        paths = [spec for spec in self.analyzers.values() if isinstance(spec, str)]
        if self.default_analyzer not in self.analyzers:
            paths.append(self.default_analyzer)
        return tuple(dict.fromkeys(module_of(path) for path in paths))


def parse_analyzers(value: dict[str, Any]) -> dict[str, str | ProgramSpec]:
    """The ``ANALYZERS`` setting checked: name -> dotted class path or program spec;
    ``ValueError`` in one line naming ANALYZERS for anything else."""
    analyzers: dict[str, str | ProgramSpec] = {}
    for name, spec in value.items():
        if not isinstance(name, str) or not 0 < len(name) <= 100:
            raise ValueError(f"ANALYZERS: {name!r} is not a name (1-100 characters)")
        if isinstance(spec, str) and DOTTED.fullmatch(spec):
            analyzers[name] = spec
        elif isinstance(spec, dict):
            analyzers[name] = ProgramSpec.parse(name, spec)
        else:
            raise ValueError(
                f"ANALYZERS[{name!r}] must be a dotted class path or "
                f'{{"argv": [...], "timeout": seconds}}, got {spec!r}'
            )
    return analyzers


def _dict_setting(settings: BaseSettings, name: str) -> dict[str, Any]:
    """A dict setting (a dict, or JSON text from ``-s``); ``ValueError`` naming it."""
    try:
        value = settings.getdict(name)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a dict (or JSON object): {exc}") from None
    return dict(value)
