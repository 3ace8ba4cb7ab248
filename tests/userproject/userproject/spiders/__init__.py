"""Spiders of every usual kind; each takes ``-a hosts=ADDR:PORT,...`` (the sites it
may crawl: its first host is where it starts) and stays on those hosts."""

from __future__ import annotations


def host_list(hosts: str) -> list[str]:
    """``-a hosts=127.0.0.2:8000,127.0.0.3:8000`` as a list of authorities."""
    return [host.strip() for host in hosts.split(",") if host.strip()]


def domains_of(hosts: list[str]) -> list[str]:
    """``allowed_domains`` of *hosts*: their names without the port."""
    return [host.rpartition(":")[0] or host for host in hosts]
