"""Import the MCP SDK's server side without what a server never runs.

Every agent session starts a ``noon serve``, and the SDK's import is most of its first answer.
Three parts of that import do nothing for a server:

- ``import mcp.server.lowlevel`` first runs ``mcp/__init__`` (the SDK's client, httpx,
  cryptography) and ``mcp/server/__init__`` (the high-level ``MCPServer`` and its resource
  templates). :func:`enter_packages` registers both packages without running their
  ``__init__``; the first time anything asks either for a name only its ``__init__`` defines
  (``from mcp import Client``), that ``__init__`` runs in place, so every SDK spelling still works.
  A submodule asked of either package (``from mcp.server import stdio``) is imported on its own.
- The protocol's ~550 pydantic models each build their validator as their class is defined; a
  session uses a few dozen. Defined under ``defer_build``, a model (and a type adapter) builds the
  same validator from the same definition the first time it is used; meanwhile each distinct
  text compiled (an annotation, a dataclass's method) is compiled once
  (:func:`noon.codecache.compiled_once`; ``noon serve`` keeps the code between processes).

- The SDK's low-level server module binds names from its HTTP side at import (starlette's
  application and routing, its auth routes, the streamable-HTTP manager, which loads
  sse-starlette, uvicorn and click) for one method, ``Server.streamable_http_app``, which a stdio
  session never calls. While that module is imported those modules are stood in for
  (:func:`http_side_deferred`): each name it binds from them is a :class:`Pending` stand-in until
  anything uses one or calls that method, which loads the real modules and puts the real objects
  in the stand-ins' places, the method's defaults included (:func:`load_http_side`). noon's own
  HTTP server imports those modules itself.

What the import leaves lives as long as the process, so it is then frozen (``gc.freeze``): the
collector's full collections, which a session's large calls set off from time to time, no longer
walk it.

Nothing here changes what goes on the wire: the server is the SDK's own, its modules' code and
models unchanged; only when they are loaded moves. ``tests/test_cli_start.py`` holds the imports
away, ``tests/mcp/test_sdk_import.py`` holds them to the SDK's behaviour.
"""

from __future__ import annotations

import functools
import gc
import importlib
import importlib.util
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FunctionType, ModuleType
from typing import Any

from noon.codecache import compiled_once
from noon.core.gcpause import paused

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
    never uses.

    ``defer_build`` does not reach ``model_rebuild``, which builds at once: the SDK calls it at
    import on four request-params models (to resolve their forward references then), and pydantic
    on a generic model each time it is first parametrized (``Request[...]``, ``Notification[...]``,
    ``PaginatedRequest[...]``, on the way to defining their subclasses): seven validators, about
    17 ms of CPU, of which a session uses one (``CallToolRequestParams``, 3 ms, built on its
    first ``tools/call``). Inside, a rebuild asked for with pydantic's
    defaults waits for first use too, when the model's own module resolves the same names; the
    rebuild a model's first use asks for (``raise_errors=False``) and a forced one build at once."""
    try:
        from pydantic import BaseModel, TypeAdapter
        from pydantic._internal import _config
    except ImportError:  # another pydantic: models build as they are defined, which is only slower
        yield
        return
    defaults: dict[str, Any] = _config.config_defaults  # type: ignore[assignment]
    before = defaults.get("defer_build", False)
    adapter_defers = TypeAdapter.__dict__.get("_defer_build")
    rebuild = BaseModel.__dict__.get("model_rebuild")
    defaults["defer_build"] = True
    if isinstance(adapter_defers, property):
        TypeAdapter._defer_build = property(lambda _: True)  # type: ignore[assignment,method-assign]
    if isinstance(rebuild, classmethod):
        waits: Any = classmethod(_rebuilt_on_first_use(rebuild.__func__))
        BaseModel.model_rebuild = waits  # type: ignore[method-assign]
    try:
        yield
    finally:
        defaults["defer_build"] = before
        if isinstance(adapter_defers, property):
            TypeAdapter._defer_build = adapter_defers  # type: ignore[assignment,method-assign]
        if isinstance(rebuild, classmethod):
            BaseModel.model_rebuild = rebuild  # type: ignore[assignment,method-assign]


def _rebuilt_on_first_use(rebuild: Any) -> Any:
    """``model_rebuild`` that leaves a model not built yet to its first use unless forced or
    asked by that use (which passes ``raise_errors=False``)."""

    def model_rebuild(
        cls: Any,
        *,
        force: bool = False,
        raise_errors: bool = True,
        _parent_namespace_depth: int = 2,
        _types_namespace: Any = None,
    ) -> bool | None:
        if not force and raise_errors:
            return None  # built or not, nothing to build now: a model built answers None too
        return rebuild(
            cls,
            force=force,
            raise_errors=raise_errors,
            # the frames counted up from pydantic's model_rebuild: this one is one more
            _parent_namespace_depth=_parent_namespace_depth + 1 if _parent_namespace_depth else 0,
            _types_namespace=_types_namespace,
        )

    return model_rebuild


HTTP_SIDE_USER = "mcp.server.lowlevel.server"
"""The module whose HTTP-side names are stood in for until used."""
HTTP_SIDE = (
    "starlette.applications",
    "starlette.middleware",
    "starlette.middleware.authentication",
    "starlette.routing",
    "mcp.server.auth.middleware.auth_context",
    "mcp.server.auth.middleware.bearer_auth",
    "mcp.server.auth.provider",
    "mcp.server.auth.routes",
    "mcp.server.auth.settings",
    "mcp.server.streamable_http",
    "mcp.server.streamable_http_manager",
    "mcp.server.transport_security",
)
"""The modules it binds names from only to build a streamable-HTTP app (``tests/test_cli_start.py``
holds them away from a stdio session, ``tests/mcp/test_sdk_import.py`` holds every use of their
names to that one method)."""


class Pending:
    """A name bound from an HTTP-side module not loaded yet. Anything done with it (a call, an
    attribute, a subclass, an instance check, a comparison) loads the HTTP side and is done with
    the real object. Arithmetic and ordering are not stood in for: they raise ``TypeError``."""

    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str) -> None:
        self.module = module
        self.name = name

    def real(self) -> Any:
        return getattr(importlib.import_module(self.module), self.name)

    def _used(self) -> Any:
        load_http_side()
        return self.real()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._used()(*args, **kwargs)

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):  # what Python's own machinery probes, as absent
            raise AttributeError(attr)
        return getattr(self._used(), attr)

    def __getitem__(self, item: Any) -> Any:
        return self._used()[item]

    def __mro_entries__(self, bases: tuple[Any, ...]) -> tuple[Any, ...]:
        return (self._used(),)

    def __instancecheck__(self, obj: Any) -> bool:
        return isinstance(obj, self._used())

    def __subclasscheck__(self, cls: Any) -> bool:
        return issubclass(cls, self._used())

    def __eq__(self, other: object) -> bool:
        return bool(self._used() == _real(other))

    def __hash__(self) -> int:
        return hash(self._used())

    def __bool__(self) -> bool:
        return bool(self._used())

    def __repr__(self) -> str:
        return f"<{self.module}.{self.name}, loaded on first use>"


def _real(value: Any) -> Any:
    return value.real() if isinstance(value, Pending) else value


class _StandIn(ModuleType):
    """An HTTP-side module while the low-level server is imported: each name asked is a stand-in."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return Pending(self.__name__, name)


@contextmanager
def http_side_deferred(modules: tuple[str, ...] = HTTP_SIDE) -> Iterator[None]:
    """Inside, importing one of ``modules`` (not loaded yet) gives a stand-in module."""
    stand_ins = {name: _StandIn(name) for name in modules if name not in sys.modules}
    sys.modules.update(stand_ins)
    try:
        yield
    finally:
        for name, module in stand_ins.items():
            if sys.modules.get(name) is module:
                del sys.modules[name]


def pending_functions(module: ModuleType) -> Iterator[tuple[Any, str, FunctionType]]:
    """The functions of ``module`` (its own and its classes' methods) whose defaults hold a
    stand-in, each with where it is bound (the module or the class) and its name there."""
    for owner in [module, *(v for v in vars(module).values() if isinstance(v, type))]:
        for name, func in list(vars(owner).items()):
            if isinstance(func, FunctionType) and func.__module__ == module.__name__:
                defaults = (*(func.__defaults__ or ()), *(func.__kwdefaults__ or {}).values())
                if any(isinstance(v, Pending) for v in defaults):
                    yield owner, name, func


_LOADING_FIRST: list[tuple[Any, str, FunctionType]] = []
"""The functions with a stand-in default, where each is bound and the original function."""
_LOADING = threading.Lock()


def load_http_side_first(module: ModuleType) -> None:
    """Bind each function of ``module`` with a stand-in default to one that loads the HTTP side
    (which puts the original back, its defaults real) before calling it: a call binds its
    defaults before its body runs, so a stand-in would otherwise reach the body as an argument."""
    for owner, name, func in list(pending_functions(module)):
        setattr(owner, name, _loading_first(func))
        _LOADING_FIRST.append((owner, name, func))


def _loading_first(func: FunctionType) -> Any:
    @functools.wraps(func)
    def loading_first(*args: Any, **kwargs: Any) -> Any:
        load_http_side()
        return func(*args, **kwargs)

    return loading_first


def load_http_side() -> None:
    """Load the HTTP-side modules stood in for and put the real objects in the stand-ins'
    places: the low-level server's names, and its functions, with real defaults. Idempotent."""
    module = sys.modules.get(HTTP_SIDE_USER)
    if module is None:
        return
    with _LOADING:  # a second thread returns only once the first has put everything in place
        while _LOADING_FIRST:
            owner, name, func = _LOADING_FIRST.pop()
            if func.__defaults__:
                func.__defaults__ = tuple(map(_real, func.__defaults__))
            if func.__kwdefaults__:
                func.__kwdefaults__ = {k: _real(v) for k, v in func.__kwdefaults__.items()}
            setattr(owner, name, func)
        for name, value in list(vars(module).items()):
            if isinstance(value, Pending):
                setattr(module, name, value.real())


def load_server_side() -> None:
    """Import the SDK modules a noon server uses, the lean way when nothing imported it before."""
    if not enter_packages():
        return
    # Compiled once first: entering the models' window imports pydantic, whose core_schema types
    # hold some 600 string annotations, 155 distinct texts: 470 compiles fewer.
    # No cyclic collection meanwhile: the import leaves some 58,000 tracked objects that live as
    # long as the process, and the collections it would set off (about 140, one of them over
    # everything) would walk what is there so far to find almost nothing.
    with paused(), compiled_once(), models_built_on_first_use():
        with http_side_deferred():
            import mcp.server.lowlevel.server
        load_http_side_first(mcp.server.lowlevel.server)
        import mcp.server.context
        import mcp.server.models
        import mcp.server.subscriptions
        import mcp.shared.exceptions
        import mcp.types

        # What is loaded so far (the SDK's modules and models, pydantic's, the standard
        # library's) lives as long as the process: out of the collector's reach, a full
        # collection no longer walks it again (each walked about 80,000 objects, 30 to 45 ms of
        # CPU, four times in a 10k-entity fill of a knowledge-graph session; a request that set
        # one off waited for it). Frozen before the collector is enabled again: the first
        # collection after it would otherwise walk all of it as its young generation (13 ms).
        gc.freeze()
