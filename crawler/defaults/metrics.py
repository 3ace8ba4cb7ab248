"""Defaults of the metrics settings (``METRICS_*``): this node's Prometheus endpoint,
read by crawler/metrics/."""

# Port of this node's Prometheus endpoint (http://METRICS_HOST:METRICS_PORT/metrics);
# None or 0: no endpoint. A port in use stops start-up (one line, exit status 1).
METRICS_PORT: int | None = None
# Address the endpoint listens on; 0.0.0.0 lets another machine's Prometheus scrape it.
METRICS_HOST = "127.0.0.1"
# Seconds between two reads of the cluster-wide gauges from Redis (queued, leased,
# hosts, nodes alive), however often /metrics is scraped; scrapes in between get the
# last read.
METRICS_REFRESH = 5.0
