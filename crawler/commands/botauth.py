"""``scrapy botauth [--key PATH]``: print the Web Bot Auth key directory to publish.

Sites verify a signed request (crawler/middlewares/botauth.py) with the public key
they fetch from ``<BOT_AUTH_DIRECTORY_URL>/.well-known/http-message-signatures-directory``.
This prints that JWK Set for ``BOT_AUTH_KEY`` (or ``--key``): serve it there as it
is, with ``Content-Type: application/http-message-signatures-directory+json``
(docs/politeness.md). Only the public key is printed.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from crawler.defaults import install_defaults
from crawler.middlewares.botauth import load_key, public_bytes
from crawler.policy.botauth import directory

if TYPE_CHECKING:
    import argparse


class Command(ScrapyCommand):
    requires_project = False
    requires_crawler_process = False

    def syntax(self) -> str:
        return "[--key PATH]"

    def short_desc(self) -> str:
        return "Print the Web Bot Auth key directory (JWKS) of BOT_AUTH_KEY"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "--key",
            metavar="PATH",
            help="the Ed25519 private key (PEM) whose public key to print "
            "(default: BOT_AUTH_KEY)",
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        if args:
            raise UsageError(f"no arguments expected, got {args!r}")
        settings = self.settings.copy()
        install_defaults(settings)  # below the project's and -s
        path = opts.key or settings.get("BOT_AUTH_KEY")
        if not path:
            print("scrapy botauth: set BOT_AUTH_KEY or give --key", file=sys.stderr)
            self.exitcode = 1
            return
        try:
            key = load_key(str(path))
        except ValueError as exc:
            print(f"scrapy botauth: {exc}", file=sys.stderr)
            self.exitcode = 1
            return
        print(json.dumps(directory([public_bytes(key)]), indent=2))
