"""``scrapy frontier set [--node NODE] KEY VALUE | KEY=VALUE | KEY --unset``: a
run-time setting for every node of the crawl, or for one node (``--node``: it wins
over the crawl-wide value on that node).

A value is checked as start-up would check it, merged with the run-time values
already in force (crawl-wide, and each node's own), so no node is ever told
something it would refuse; a bad one is refused in one line, exit 1. A node applies
it at its next heartbeat (``crawler.frontier.node.runcontrol``).
"""

from __future__ import annotations

from typing import IO, TYPE_CHECKING

from crawler.commands.steering import HEARTBEAT, ControlError
from crawler.context.runsettings import with_runtime_settings
from crawler.crawlstate import controls
from crawler.crawlstate.controls import canonical_name, check_runtime_name
from crawler.crawlstate.nodetable import read_node_table

if TYPE_CHECKING:
    import argparse

    import redis

    from crawler.crawlstate.controls import Control
    from crawler.crawlstate.keys import CrawlKeys


def set_setting(
    client: redis.Redis, keys: CrawlKeys, opts: argparse.Namespace, out: IO[str]
) -> int:
    """Give a run-time setting a new value (every node, or ``--node``'s), or drop
    it (``--unset``)."""
    name, value = setting_words(opts.words)
    node: str | None = opts.node
    table = read_node_table(client, keys)
    if node is not None and table.find(node) is None:
        raise ControlError(
            f"no node {node!r} in crawl {keys.prefix!r} (`scrapy frontier nodes` "
            "lists them)"
        )
    where = (
        f"node {node!r} of crawl {keys.prefix!r}" if node else f"crawl {keys.prefix!r}"
    )
    if opts.unset:
        if controls.unset_setting(client, keys, name, node):
            back = "its crawl's or its own" if node else "their own"
            out.write(f"{name} of {where} dropped: back to {back} value {HEARTBEAT}\n")
        else:
            out.write(f"{name} had no run-time value in {where}\n")
        return 0
    assert value is not None
    _check(opts, table.control, name, value, node)
    controls.set_setting(client, keys, name, value, node)
    who = "the node applies" if node else "nodes apply"
    out.write(f"{name} = {value!r} in {where}: {who} it {HEARTBEAT}\n")
    return 0


def setting_words(words: list[str]) -> tuple[str, str | None]:
    """(KEY, VALUE) of ``KEY VALUE`` or ``KEY=VALUE``, (KEY, None) of ``KEY``
    (``--unset``); KEY upper-cased, a run-time setting, else ``ControlError``."""
    if len(words) == 1 and "=" in words[0]:
        key, value = words[0].split("=", 1)
        words = [key, value]
    name = canonical_name(words[0].upper())
    try:
        check_runtime_name(name)
    except ValueError as exc:
        raise ControlError(str(exc)) from None
    return name, words[1] if len(words) > 1 else None


def _check(
    opts: argparse.Namespace,
    control: Control,
    name: str,
    value: str,
    node: str | None,
) -> None:
    """Refuse *value* (``ControlError``) unless it passes start-up checks on its
    own and with the run-time values it would join on every node it reaches."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ControlError(f"{name}: the value given is not UTF-8 text") from None
    try:
        with_runtime_settings(opts.settings, {name: value})
    except ValueError as exc:
        raise ControlError(str(exc)) from None
    if node is not None:
        merged = [{**control.settings_for(node), name: value}]
    else:
        crawl = {**control.settings, name: value}
        merged = [crawl] + [{**crawl, **own} for own in control.node_settings.values()]
    for overrides in merged:
        try:
            with_runtime_settings(opts.settings, overrides)
        except ValueError as exc:
            raise ControlError(
                f"{exc} (a run-time value in force: `scrapy frontier set NAME "
                "--unset` drops it)"
            ) from None
