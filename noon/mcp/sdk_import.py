"""Import the MCP SDK's server side without what a server never runs.

Every agent session starts a ``noon serve``, and the SDK's import is most of its first answer.
Two parts of that import do nothing for a server:

- ``import mcp.server.lowlevel`` first runs ``mcp/__init__`` (the SDK's client, httpx,
  cryptography) and ``mcp/server/__init__`` (the high-level ``MCPServer`` and its resource
  templates). :func:`enter_packages` registers both packages without running their
  ``__init__``; the first time anything asks either for a name only its ``__init__`` defines
  (``from mcp import Client``), that ``__init__`` runs in place, so every SDK spelling still works.
  A submodule asked of either package (``from mcp.server import stdio``) is imported on its own.
- The protocol's ~550 pydantic models each build their validator as their class is defined; a
  session uses a few dozen. Defined under ``defer_build``, a model (and a type adapter) builds the
  same validator from the same definition the first time it is used; meanwhile each distinct
  annotation text is compiled once (:func:`annotations_compiled_once`).

What the import leaves lives as long as the process, so it is then frozen (``gc.freeze``): the
collector's full collections, which a session's large calls set off from time to time, no longer
walk it.

Nothing here changes what goes on the wire: the server is the SDK's own, its modules and models
unchanged; only when they are loaded moves. ``tests/test_cli_start.py`` holds the imports away.
"""

from __future__ import annotations

import gc
import importlib
import importlib.util
import sys
import typing
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

LAZY_PACKAGES = ("mcp", "mcp.server")
"""Packages whose ``__init__`` a server does not need (parents first)."""


class _DeferredInit(ModuleType):
    """A package registered with its path but its ``__init__`` not yet run."""

    def __getattr__(self, name: str) -> Any:
        # Only reached for a name the package does not hold yet. A submodule is imported on its
        # own (``from mcp.server import stdio`` asks the package for ``stdio`` before importing
        # it, and the real __init__ would bind it too); any other name runs the real __init__ in
        # place, once, then answers as the full package would.
        if not name.startswith("__") and importlib.util.find_spec(f"{self.__name__}.{name}"):
            return importlib.import_module(f"{self.__name__}.{name}")
        self.__class__ = ModuleType  # type: ignore[assignment]
        spec = self.__spec__
        assert spec is not None and spec.loader is not None
        spec.loader.exec_module(self)
        return getattr(self, name)


def enter_packages(names: tuple[str, ...] = LAZY_PACKAGES) -> bool:
    """Register ``names`` as packages whose ``__init__`` runs on first use of one of its own
    names; False (and nothing done) when the SDK is already imported."""
    if any(name in sys.modules for name in names):
        return False
    for name in names:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.submodule_search_locations is None:
            return False
        package = _DeferredInit(name)
        package.__spec__ = spec
        package.__path__ = list(spec.submodule_search_locations)
        package.__file__ = spec.origin
        package.__package__ = name
        package.__loader__ = spec.loader
        sys.modules[name] = package
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(sys.modules[parent], child, package)
    return True


@contextmanager
def models_built_on_first_use() -> Iterator[None]:
    """pydantic models and type adapters defined inside build their validators on first use
    (``defer_build``); a type adapter of a union otherwise builds at once, and the SDK defines
    seven at import, six of which (its public ``client_request_adapter`` and the like) a server
    never uses."""
    try:
        from pydantic import TypeAdapter
        from pydantic._internal import _config
    except ImportError:  # another pydantic: models build as they are defined, which is only slower
        yield
        return
    defaults: dict[str, Any] = _config.config_defaults  # type: ignore[assignment]
    before = defaults.get("defer_build", False)
    adapter_defers = TypeAdapter.__dict__.get("_defer_build")
    defaults["defer_build"] = True
    if isinstance(adapter_defers, property):
        TypeAdapter._defer_build = property(lambda _: True)  # type: ignore[assignment,method-assign]
    try:
        yield
    finally:
        defaults["defer_build"] = before
        if isinstance(adapter_defers, property):
            TypeAdapter._defer_build = adapter_defers  # type: ignore[assignment,method-assign]


@contextmanager
def annotations_compiled_once() -> Iterator[None]:
    """Each string annotation compiled once, however many fields carry it.

    pydantic evaluates a model's string annotations through ``typing.ForwardRef``, which compiles
    its text anew each time: the SDK's models hold about 2,400 of them, 340 distinct. A code
    object does not change once compiled, so one per text serves every field that has it."""
    compiled: dict[tuple[Any, ...], Any] = {}

    def compile_once(source: Any, filename: Any, mode: str, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(source, str) or args or kwargs:
            return compile(source, filename, mode, *args, **kwargs)
        key = (source, filename, mode)
        code = compiled.get(key)
        if code is None:
            code = compiled[key] = compile(source, filename, mode)
        return code

    if hasattr(typing, "compile"):  # not the typing this was written against: leave it be
        yield
        return
    typing.compile = compile_once  # type: ignore[attr-defined]  # shadows the builtin for typing
    try:
        yield
    finally:
        del typing.compile  # type: ignore[attr-defined]


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic garbage collection inside: the SDK's import leaves some 58,000 tracked objects
    that live as long as the process, and the collections it would set off meanwhile (about 140,
    one of them over everything) walk what is there so far to find almost nothing."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def load_server_side() -> None:
    """Import the SDK modules a noon server uses, the lean way when nothing imported it before."""
    if not enter_packages():
        return
    with collector_paused(), models_built_on_first_use(), annotations_compiled_once():
        import mcp.server.context
        import mcp.server.lowlevel.server
        import mcp.server.models
        import mcp.server.subscriptions
        import mcp.shared.exceptions
        import mcp.types  # noqa: F401
    # What is loaded so far (the SDK's modules and models, pydantic's, the standard library's)
    # lives as long as the process: out of the collector's reach, a full collection no longer
    # walks it again (each walked about 80,000 objects, 30 to 45 ms of CPU, four times in a
    # 10k-entity fill of a knowledge-graph session; a request that set one off waited for it).
    gc.freeze()
