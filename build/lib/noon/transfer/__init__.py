"""Moving memories in and out: ``noon import`` and ``noon export``.

Readers (:mod:`official`, :mod:`nocturne`, :mod:`noon_format`) validate a whole input before
anything is written, so malformed input is reported with its locations and imports nothing.
Writers go through a store of their own with node id ``<node>-import`` (:mod:`importer`), so an
import can run while MCP servers write the node's own shard.
"""
