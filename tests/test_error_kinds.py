"""The error tree of noon/errors.py holds: every error class of noon and noond derives from its
root, and every error the use cases and the edges that call them raise on purpose (the graph and
knowledge-graph rules, the store's refusals, noon.app, the MCP tools, the page) is of exactly one
refusal kind, so each edge's one mapping covers it."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

import noon
import noond
from noon import errors

SCOPE = ("noon.app", "noon.graph", "noon.kg", "noon.web", "noon.mcp", "noon.store")


def _subclasses(cls: type) -> set[type]:
    found: set[type] = set()
    subclasses: list[type] = cls.__subclasses__()
    for sub in subclasses:
        found |= {sub, *_subclasses(sub)}
    return found


def test_every_refusal_in_scope_is_of_one_kind() -> None:
    for info in pkgutil.walk_packages(noon.__path__, "noon."):
        if info.name.startswith(SCOPE):
            importlib.import_module(info.name)
    in_scope = {c for c in _subclasses(errors.NoonError) if c.__module__.startswith(SCOPE)}
    assert len(in_scope) >= 15, sorted(c.__qualname__ for c in in_scope)
    wrong = {
        f"{c.__module__}.{c.__qualname__}": [k.__name__ for k in errors.KINDS if issubclass(c, k)]
        for c in in_scope
    }
    loose = {name: kinds for name, kinds in wrong.items() if len(kinds) != 1}
    # not a refusal: a retried call's signal that it was written before (its answer follows)
    assert loose.pop("noon.store.errors.AlreadyWritten") == []
    # a version not held is both invalid to roll back to and not found: MCP and the page agree
    assert loose == {"noon.store.rollback.VersionNotHeld": ["NotFound", "Invalid"]}


def test_a_memory_that_is_not_there_is_not_found_not_invalid() -> None:
    from noon.graph.plan import MemoryNotFound

    assert issubclass(MemoryNotFound, errors.NotFound)
    assert not issubclass(MemoryNotFound, errors.Invalid)


def _every_module() -> list[ModuleType]:
    """Every module of noon and noond but the two programs' ``__main__``."""
    found = []
    for package in (noon, noond):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if not info.name.endswith(".__main__"):
                found.append(importlib.import_module(info.name))
    return found


def test_every_error_class_of_noon_and_noond_derives_from_the_root() -> None:
    """A caller that catches :class:`noon.errors.NoonError` catches every error noon raises on
    purpose. A private class (``_Name``) is a signal that never leaves its module."""
    classes = {
        f"{module.__name__}.{name}": value
        for module in _every_module()
        for name, value in vars(module).items()
        if inspect.isclass(value)
        and issubclass(value, BaseException)
        and value.__module__ == module.__name__
    }
    assert len(classes) >= 50, sorted(classes)
    outside = sorted(
        name
        for name, cls in classes.items()
        if not issubclass(cls, errors.NoonError) and not name.rsplit(".", 1)[-1].startswith("_")
    )
    assert outside == [], f"derive these from noon.errors.NoonError (or a kind): {outside}"
