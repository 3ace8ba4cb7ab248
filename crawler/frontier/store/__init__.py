"""The frontier's state in Redis: the store's round trips (push, ack, pop, requeue,
promote), the Lua scripts they run, shard summaries and repair."""
