"""METRICS_* settings: off by default, a bad value is one line naming the setting."""

from __future__ import annotations

import pytest
from scrapy.settings import Settings

from crawler import defaults
from crawler.metrics.exporter import MetricsConfig


def config(**values: object) -> MetricsConfig:
    settings = Settings(
        {
            "METRICS_PORT": defaults.METRICS_PORT,
            "METRICS_HOST": defaults.METRICS_HOST,
            "METRICS_REFRESH": defaults.METRICS_REFRESH,
        }
    )
    settings.setdict(values, priority="cmdline")
    return MetricsConfig.from_settings(settings)


def test_the_default_is_no_endpoint_on_loopback():
    assert config() == MetricsConfig(port=None, host="127.0.0.1", refresh=5.0)


@pytest.mark.parametrize("value", [None, 0, "0", "", "None", "none"])
def test_values_that_mean_no_endpoint(value):
    assert config(METRICS_PORT=value).port is None


@pytest.mark.parametrize(("value", "port"), [(9410, 9410), ("9410", 9410), (1, 1)])
def test_a_port(value, port):
    assert config(METRICS_PORT=value).port == port


@pytest.mark.parametrize(
    ("values", "words"),
    [
        ({"METRICS_PORT": "abc"}, ["METRICS_PORT", "'abc'"]),
        ({"METRICS_PORT": -1}, ["METRICS_PORT", "-1"]),
        ({"METRICS_PORT": 65536}, ["METRICS_PORT", "65536"]),
        ({"METRICS_HOST": ""}, ["METRICS_HOST"]),
        ({"METRICS_REFRESH": 0}, ["METRICS_REFRESH"]),
        ({"METRICS_REFRESH": "soon"}, ["METRICS_REFRESH", "'soon'"]),
        ({"METRICS_REFRESH": "nan"}, ["METRICS_REFRESH"]),
    ],
)
def test_a_bad_value_is_one_line_naming_the_setting(values, words):
    with pytest.raises(ValueError, match=r"^[^\n]+$") as error:
        config(**values)
    for word in words:
        assert word in str(error.value)
