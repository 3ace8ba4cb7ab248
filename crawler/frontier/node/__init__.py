"""This node in the cluster: joining the crawl and its heartbeat (runtime), its way
to Redis (redislink), membership and shard ownership, id, drain, progress, seed
intake and run-time control."""
