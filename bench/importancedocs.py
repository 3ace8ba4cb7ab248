"""The link graph of real documentation sites, as a ``bench.simweb.Web``.

``python -m bench.importancedocs [--corpus NAME=DIR ...]`` runs the importance
simulation (``bench.importancesim``) on it: one host a corpus, every HTML file a
page, each ``<a href>`` that leads to another page of the same corpus a link
(fragments dropped, links out of the corpus ignored), the corpus's ``index.html``
its seed. By default the Debian documentation corpora ``bench.realsites`` serves
(``bench.nginxsites.DEFAULT_CORPORA``) that are installed.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urljoin, urlsplit

from bench import importanceorders, importancesim, nginxsites, simweb

if TYPE_CHECKING:
    from collections.abc import Sequence

HREF = re.compile(rb"""<a\s[^>]*?href\s*=\s*["']([^"'#]+)""", re.IGNORECASE)


def corpus_web(corpora: Sequence[tuple[str, Path]]) -> simweb.Web:
    """One host a corpus (``<name>-docs.org``), its HTML files its pages."""
    web = simweb.Web(simweb.Shape("docs", pages=0, hosts=len(corpora), seeds=0))
    pages: dict[tuple[int, str], int] = {}
    files: list[Path] = []
    for host, (name, root) in enumerate(corpora):
        web.hosts.append(f"{name}-docs.org")
        web.kinds.append("plain")
        for path in sorted(root.rglob("*.html")):
            page = web.add_page(host, "/" + path.relative_to(root).as_posix())
            pages[(host, web.paths[page])] = page
            files.append(path)
        home = pages.get((host, "/index.html"))
        if home is None:
            raise ValueError(f"{root}: no index.html to start from")
        web.homes.append(home)
        web.seeds.append(home)
    for page, path in enumerate(files):
        host = web.host_of[page]
        base = f"http://x{web.paths[page]}"
        targets = []
        for match in HREF.finditer(path.read_bytes()):
            href = match.group(1).decode("utf-8", "replace").strip()
            parts = urlsplit(urljoin(base, href))
            if parts.scheme != "http" or parts.netloc != "x" or parts.query:
                continue
            target = pages.get((host, unquote(parts.path)))
            if target is not None and target != page:
                targets.append(target)
        web.links[page] = list(dict.fromkeys(targets))
    return web


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", action="append", default=[], metavar="NAME=DIR")
    parser.add_argument("--orders", default=",".join(importanceorders.DEFAULT))
    parser.add_argument("--pace", type=float, default=0.0, help="s between requests")
    args = parser.parse_args(argv)
    corpora = [tuple(text.split("=", 1)) for text in args.corpus] or [
        (name, folder) for name, folder, _ in nginxsites.DEFAULT_CORPORA
    ]
    found = [(name, Path(folder)) for name, folder in corpora if Path(folder).is_dir()]
    if not found:
        parser.error("no corpus folder found (install python3.11-doc, ...)")
    web = corpus_web(found)
    rank = simweb.pagerank(web.links)
    orders = [importanceorders.named(o) for o in args.orders.split(",")]
    timing = importancesim.Timing(pace=args.pace)
    curves = importancesim.evaluate(web, rank, orders, timing)
    names = ", ".join(name for name, _ in found)
    title = f"docs ({names}): {len(web.paths)} pages, {sum(map(len, web.links))} links"
    print(importancesim.table(title, curves))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
