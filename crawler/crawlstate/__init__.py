"""The crawl's state in Redis: key names, connections, the private server, and the
readers that nodes and commands share."""
