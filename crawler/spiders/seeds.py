"""The bfs spider's seeds: the URLs of ``-a seeds=URL,URL`` and of the lines of
``-a seeds_file=PATH``, each checked (``parse_seed``). A bad seed is skipped and
named with where it came from; seeds of which none is valid stop the crawl at
start, in one line with the first error.
"""

from __future__ import annotations

from pathlib import Path

from crawler.policy.scope import parse_seed


def read_seeds(seed_arg: str, seeds_file: str) -> tuple[list[str], list[str]]:
    """The valid seeds, and one line for each bad one, unless none is valid: then
    ``ValueError`` says so, in one line with the first error."""
    lines = [("-a seeds", 0, url) for url in seed_arg.split(",")]
    if seeds_file:
        lines += [
            (seeds_file, number, line)
            for number, line in enumerate(seed_file_lines(seeds_file), start=1)
        ]
    seeds, errors = [], []
    for source, number, line in lines:
        try:
            url = parse_seed(line)
        except ValueError as exc:
            errors.append(
                f"{source} line {number}: {exc}" if number else f"{source}: {exc}"
            )
            continue
        if url:
            seeds.append(url)
    if errors and not seeds:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise ValueError(f"no valid seed: {errors[0]}{more}")
    return seeds, errors


def seed_file_lines(seeds_file: str) -> list[str]:
    """The lines of *seeds_file*; ``ValueError`` naming it if it cannot be read."""
    try:
        text = Path(seeds_file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read seeds_file {seeds_file}: {exc}") from None
    return text.splitlines()
