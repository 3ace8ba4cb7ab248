"""This node in the cluster: its runtime (heartbeat, maintenance, end of crawl),
membership and shard ownership, id, drain, progress, seed intake and run-time
control."""
