"""The I/O edge around the core: shard files in ``NOON_DIR``, locks, compaction, collection,
replication's file side, and the machine's read model derived from the shards."""
