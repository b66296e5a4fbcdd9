"""The ``noon`` CLI's commands (``log``, ``history``, ``query``, ``status``, ``doctor``, ``certs``,
``peers``, ``compact``, ``reindex``); ``noon serve`` and ``noon web`` live with their edges."""
