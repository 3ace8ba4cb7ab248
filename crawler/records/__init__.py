"""The page-record database, which is also the URL library: connection (SQLite or
PostgreSQL), schema, queries, and each URL's revisit entry."""
