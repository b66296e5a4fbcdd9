"""The SDK's 2026-07-28 protocol era, loaded when a message of that era is first validated.

``mcp_types.methods`` keys its per-version maps (``CLIENT_REQUESTS``, ``SERVER_RESULTS``, ...)
by ``(method, version)`` and imports both schema eras' wire models for them at import: the
2025-11-25 era validates every earlier version, the 2026-07-28 era its own. A session whose
client negotiated a 2025 version (or older) never reads a 2026 row, yet the era's ~200 models
were defined in every session's start (about 25 ms of CPU in one process).

While ``mcp_types.methods`` is imported (:func:`import_methods`), the era's module is a stand-in
whose every name is a :class:`Placeholder`; the maps holding one are then given (still read-only
``MappingProxyType``) :class:`EraRows`, which load the era and put its objects in the
placeholders' places before answering anything but their keys: a membership test, the keys and
the size (the version gate, ``SPEC_CLIENT_METHODS``) never load it; a 2025 row is answered as it
is; a 2026 row, or the values, items, a copy, a merge or a comparison, load it first. The era is
loaded as the SDK's import is (:mod:`noon.mcp.sdk_import`: the collector paused, its models built
on first use), and ``mcp_types.methods``' own name for it is the real module from then on.

Where ``mcp_types.methods`` uses the era at import beyond naming its classes in those maps (an
SDK this was not written against), the stand-in is dropped and it is imported whole again.
``tests/mcp/test_sdk_eras.py`` holds every map to the SDK's own, and a 2026 request to its
validation.
"""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from types import FunctionType, MappingProxyType, ModuleType
from typing import Any

ERA = "mcp_types._v2026_07_28"
"""The era stood in for."""
METHODS = "mcp_types.methods"
"""The module that names its classes."""


class Placeholder:
    """A name of the era not loaded yet."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<{ERA}.{self.name}, loaded on first use>"


class _StandIn(ModuleType):
    """The era's module while ``mcp_types.methods`` is imported: each name asked a placeholder."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return Placeholder(name)


_ROWS: list[EraRows] = []
"""The maps holding placeholders until the era is loaded."""
_LOADING = threading.Lock()
_window: list[Callable[[], AbstractContextManager[None]]] = []
"""How the era is imported when it is loaded (set by :func:`import_methods`)."""


def load_era() -> None:
    """Import the era (once) and put its objects in every placeholder's place."""
    with _LOADING:
        if not _ROWS:
            return
        with _window[0]():
            era = importlib.import_module(ERA)
        for rows in _ROWS:
            for key, value in dict.items(rows):
                if type(value) is Placeholder:
                    dict.__setitem__(rows, key, getattr(era, value.name))
        methods = sys.modules.get(METHODS)
        if methods is not None and isinstance(vars(methods).get("v2026"), _StandIn):
            methods.v2026 = era  # type: ignore[attr-defined]
        _ROWS.clear()


def _loading_first(name: str) -> Any:
    method = getattr(dict, name)

    def loading_first(self: EraRows, *args: Any, **kwargs: Any) -> Any:
        load_era()
        return method(self, *args, **kwargs)

    loading_first.__name__ = name
    return loading_first


class EraRows(dict[Any, Any]):
    """A map's rows, some of them placeholders until the era is loaded."""

    def __getitem__(self, key: Any) -> Any:
        value = dict.__getitem__(self, key)
        if type(value) is Placeholder:
            load_era()
            value = dict.__getitem__(self, key)
        return value

    def get(self, key: Any, default: Any = None) -> Any:
        return self[key] if key in self else default  # noqa: SIM401 (self.get is this)

    items = _loading_first("items")
    values = _loading_first("values")
    copy = _loading_first("copy")
    __or__ = _loading_first("__or__")
    __ror__ = _loading_first("__ror__")
    __eq__ = _loading_first("__eq__")
    __ne__ = _loading_first("__ne__")
    __repr__ = _loading_first("__repr__")
    __reduce_ex__ = _loading_first("__reduce_ex__")


def _holds_placeholder(value: Any) -> bool:
    if type(value) is Placeholder:
        return True
    if isinstance(value, (MappingProxyType, dict)):
        return any(type(v) is Placeholder for v in dict(value).values())
    if isinstance(value, (tuple, list, set, frozenset)):
        return any(type(v) is Placeholder for v in value)
    return False


def import_methods(window: Callable[[], AbstractContextManager[None]]) -> None:
    """Import ``mcp_types.methods`` (not imported yet) with the 2026 era left to its first use,
    which imports it inside ``window()``; where that module cannot be imported so, or keeps a
    placeholder anywhere but in its maps, it is imported whole."""
    if METHODS in sys.modules or ERA in sys.modules:
        return
    sys.modules[ERA] = _StandIn(ERA)
    methods: ModuleType | None
    try:
        methods = importlib.import_module(METHODS)
    except Exception:  # an SDK that uses the era at import: imported whole below
        sys.modules.pop(METHODS, None)
        methods = None
    finally:
        del sys.modules[ERA]
    if methods is not None and _rows_given(methods):
        _window.append(window)
        return
    sys.modules.pop(METHODS, None)
    importlib.import_module(METHODS)


def _rows_given(methods: ModuleType) -> bool:
    """Give every map of ``methods`` that holds a placeholder its :class:`EraRows` (and every
    function default naming the map the new one); False, with nothing changed, where a
    placeholder is held anywhere else."""
    given: dict[int, Given] = {}
    for value in vars(methods).values():
        if isinstance(value, MappingProxyType) and _holds_placeholder(value):
            rows = EraRows(value)
            given[id(value)] = (MappingProxyType(rows), rows, value)
        elif _holds_placeholder(value):
            return False
    if not given:
        return False
    for name, value in list(vars(methods).items()):
        if id(value) in given:
            setattr(methods, name, given[id(value)][0])
        elif isinstance(value, FunctionType):
            if value.__defaults__:
                value.__defaults__ = tuple(_given(v, given) for v in value.__defaults__)
            if value.__kwdefaults__:
                value.__kwdefaults__ = {
                    k: _given(v, given) for k, v in value.__kwdefaults__.items()
                }
    _ROWS.extend(rows for _, rows, _ in given.values())
    return True


Given = tuple[MappingProxyType[Any, Any], EraRows, MappingProxyType[Any, Any]]
"""A map's new proxy, its rows, and the proxy it replaces (kept alive while ids are compared)."""


def _given(value: Any, given: dict[int, Given]) -> Any:
    return given[id(value)][0] if id(value) in given else value
