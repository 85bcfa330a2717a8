"""The store: schema, writer, ingest (pool and child), the read-only query and the lake."""
