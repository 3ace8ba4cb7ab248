"""Redis bytes a page of the near-duplicate index, by the pages of one host.

``python -m bench.neardupindex [--pages 20,200,2000,20000]``

A private redis-server. For each size, that many pages of one host (SimHashes
spread over all 64 bits, as distinct pages' are) are added to the index the way the
crawl adds them: before issue 27, a ``SADD`` of ``<SimHash hex>:<URL key>`` to a set a
band value (``nd:<host>:<band>``, the code at 6812222); now one call of
``crawler.spiders.neardups.ADD_TO_BANDS`` a page (14-byte records in one hash a
host). Bytes are ``MEMORY USAGE ... SAMPLES 0`` of every key of the index, over the
pages; the host's hash of URL keys (``nd-urls:``), the same in both, is left out.
Writes ``bench/out/neardupindex.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import redis

from bench.crawls import BENCH
from bench.run import machine_facts
from crawler.crawlstate.embedded import EmbeddedRedis
from crawler.policy.simhash import bands
from crawler.spiders.neardups import ADD_TO_BANDS, KEPT_FOR, RECORDS_PER_BAND

if TYPE_CHECKING:
    from collections.abc import Sequence

OUT = BENCH / "out" / "neardupindex.json"
DISTANCE = 6  # NEARDUP_MAX_DISTANCE's default
SPREAD = 0x9E37_79B9_7F4A_7C15  # an odd constant: fingerprints all over 64 bits


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pages", default="20,200,2000,20000")
    args = parser.parse_args(argv)
    sizes = [int(part) for part in args.pages.split(",")]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-neardup-") as tmp:
        server = EmbeddedRedis(Path(tmp), persist=False).start()
        client = redis.Redis.from_url(server.url)
        try:
            for pages in sizes:
                rows.append(
                    {"pages": pages, "before": _before(client, pages),
                     "after": _after(client, pages)}
                )  # fmt: skip
                print(f"{pages:>6} pages: before {rows[-1]['before']:.0f} B a page, "
                      f"after {rows[-1]['after']:.0f}", flush=True)  # fmt: skip
            facts = machine_facts(client)
        finally:
            client.close()
            server.stop()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"rows": rows, "machine": facts}, indent=1), "utf-8")
    print(f"Wrote {OUT}")
    return 0


def _fingerprint(n: int) -> int:
    return (n * SPREAD + 1) % 2**64


def _before(client: redis.Redis, pages: int) -> float:
    client.flushall()
    pipe = client.pipeline(transaction=False)
    for n in range(pages):
        fingerprint = _fingerprint(n)
        for band in bands(fingerprint, DISTANCE):
            pipe.sadd(f"nd:a.example:{band}", f"{fingerprint:016x}:{n:012x}")
            pipe.expire(f"nd:a.example:{band}", KEPT_FOR)
    pipe.execute()
    return _bytes(client, "nd:*") / pages


def _after(client: redis.Redis, pages: int) -> float:
    client.flushall()
    add = client.register_script(ADD_TO_BANDS)
    pipe = client.pipeline(transaction=False)
    for n in range(pages):
        fingerprint = _fingerprint(n)
        record = fingerprint.to_bytes(8, "big") + n.to_bytes(6, "big")
        add(
            keys=["nd-bands:a.example"],
            args=[KEPT_FOR, RECORDS_PER_BAND, record, *bands(fingerprint, DISTANCE)],
            client=pipe,
        )
    pipe.execute()
    return _bytes(client, "nd-bands:*") / pages


def _bytes(client: redis.Redis, pattern: str) -> int:
    return sum(
        int(client.memory_usage(key, samples=0) or 0)
        for key in client.scan_iter(pattern, count=1000)
    )


if __name__ == "__main__":
    sys.exit(main())
