"""The MCP edge: tool and resource tables and the ``noon serve`` server around the store."""
