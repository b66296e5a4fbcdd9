"""The pure core of noon: clock, operations, element kinds, fold and compaction planning.

Nothing in this package does I/O or knows about files, HTTP or MCP. Every function here is a
pure function of its arguments (the clock takes wall time as an argument), so it can be tested
with properties and reused unchanged by the MCP server, the CLI and the daemon.
"""
