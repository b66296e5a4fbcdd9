"""The MCP edge: ``noon serve`` and its tools, around the store.

- ``spec``: what a tool family is (tools registered by decorator, resources, refusals).
- ``families``: the two families; ``kg_tools`` (the official memory server's nine tools) and
  the URI graph's ``uri_base`` (argument/result models, the tool decorator), ``uri_views``
  (reading URIs and views, resources), ``uri_read``, ``uri_update``, ``uri_write``,
  ``instructions``.
- ``server``: the SDK server (validation, notifications); ``validation``: argument checks.
- ``command``: the CLI; ``http_app``, ``http_guard``, ``http_limits``: serving over HTTP.

Tools read and write the graphs through :mod:`noon.store.access`.
"""
