"""The URI graph: nodes, paths, and editing memory text by quoting."""
