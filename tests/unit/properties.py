"""Hypothesis settings shared by the unit property tests: fast and deterministic."""

from __future__ import annotations

from hypothesis import HealthCheck, settings

# Derandomized so that a green suite stays green (and a strict xfail stays failing);
# no example database, so a run leaves nothing behind in the work tree.
PROPERTY = settings(
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=200,
    suppress_health_check=[HealthCheck.too_slow],
)
