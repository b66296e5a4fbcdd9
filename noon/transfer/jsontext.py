"""JSON from files being imported: every way a text can fail to decode is a
:class:`json.JSONDecodeError`, including nesting deep enough to exhaust the decoder's recursion
and integers too long to convert, which ``json.loads`` raises as other exceptions."""

from __future__ import annotations

import json
from typing import Any


def loads(raw: str | bytes) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        reason = "nested too deeply"
    except ValueError as exc:  # e.g. an integer beyond the conversion limit
        reason = str(exc).split(";")[0]
    doc = raw if isinstance(raw, str) else raw.decode("utf-8", "replace")
    raise json.JSONDecodeError(reason, doc, 0) from None
