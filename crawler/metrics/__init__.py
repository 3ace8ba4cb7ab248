"""Prometheus metrics of a node: the endpoint, its node and cluster-wide families."""
