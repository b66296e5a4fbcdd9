"""The MCP edge: ``noon serve`` and its tools, around the store.

- ``spec``: what a tool family is (tools registered by decorator, resources, refusals).
- ``families``: the two families; ``kg_tools`` (the official memory server's nine tools) and
  the URI graph's ``uri_base`` (argument/result models, the tool decorator), ``uri_views``
  (reading URIs and views, resources), ``uri_read``, ``uri_update``, ``uri_write``,
  ``instructions``.
- ``server``: the SDK server (validation, notifications); ``validation``: argument checks.
- ``command``: the CLI; ``stdio_pipes``: stdio on the event loop, ``stdio_lines`` its longest
  line; ``http_app``, ``http_guard``, ``http_limits``: serving over HTTP.

Tools read and write the graphs through :mod:`noon.store.access`.

- ``sdk_import``: the SDK's server side imported without its client and with its models built on
  first use; done here, before any module of this package imports the SDK.
"""

from noon.mcp.sdk_import import load_server_side

load_server_side()
