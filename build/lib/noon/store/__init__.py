"""The I/O edge around the core: shard files in ``NOON_DIR``, locks, snapshots, compaction."""
