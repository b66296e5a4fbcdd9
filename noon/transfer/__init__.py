"""Moving memories in and out: ``noon import`` and ``noon export``.

Readers validate a whole input before anything is written, so malformed input is reported with
its locations and imports nothing: :mod:`official` (the official memory server's file, and any
``{entities, relations}`` document), :mod:`noonien` (server-noonien's shards), :mod:`nocturne`
with :mod:`postgres` and :mod:`nocturne_boot` (a Nocturne Memory database and its boot list),
:mod:`noon_format` (noon's own lossless export). Writers go through a store of their own with
node id ``<node>-import`` (:mod:`importer`), so an import can run while MCP servers write the
node's own shard.
"""
