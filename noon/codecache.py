"""Text that libraries compile at import, compiled once and kept between processes.

A new ``noon serve`` spends about a tenth of its CPU before its first answer compiling text that
is the same in every process: ``dataclasses`` writes each dataclass's methods (``__init__``,
``__repr__``, ``__eq__``, ...) as source and compiles each (about 500 texts in the SDK, pydantic,
anyio and noon: 27-29 ms), and ``typing`` compiles each string annotation pydantic evaluates
(about 2,400 in the SDK's models, some 500 distinct texts). Inside :func:`compiled_once` each
distinct text is compiled once in the process; given a file, the code objects are kept in it
(``marshal``, as Python's own bytecode cache keeps a module's) and the next process reads them
back and compiles only the texts it does not find there.

A code object is what compiling its text with this Python gives (the same file name, mode and
flags: none inherited, as ``dataclasses`` and ``typing`` have no ``__future__`` import); the
functions and annotations built from it are the same. The file is named by the interpreter's
bytecode tag, magic number and optimization level, read only when this user owns it and nobody
else may write it, and rewritten (whole, atomically) with just the texts the last import used
whenever it found one missing; where ``PYTHONDONTWRITEBYTECODE`` (``python -B``) asks for no
bytecode files, it is read but not written. A file that cannot be read or written only costs
the compiling.
"""

from __future__ import annotations

import dataclasses
import marshal
import os
import sys
import typing
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from importlib.util import MAGIC_NUMBER
from pathlib import Path
from types import CodeType
from typing import Any

Key = tuple[str, str, str]
"""A text, the file name it is compiled under, and its mode (``exec``, ``eval``)."""


class _Compiler:
    """Code objects by text: those a file held, and those this process used."""

    def __init__(self, known: dict[Key, CodeType]) -> None:
        self.known = known
        self.used: dict[Key, CodeType] = {}
        self.missed = 0

    def code(self, source: str, filename: str, mode: str) -> CodeType:
        key = (source, filename, mode)
        code = self.used.get(key)
        if code is None:
            code = self.known.get(key)
            if code is None:
                code = compile(source, filename, mode, dont_inherit=True)
                self.missed += 1
            self.used[key] = code
        return code

    def compile(self, source: Any, filename: Any, mode: str, *args: Any, **kwargs: Any) -> Any:
        """``compile`` as ``typing`` calls it (text, file name, mode); any other call as asked."""
        if type(source) is not str or type(filename) is not str or args or kwargs:
            return compile(source, filename, mode, *args, **kwargs)
        return self.code(source, filename, mode)

    def exec(self, source: Any, *args: Any, **kwargs: Any) -> None:
        """``exec`` as ``dataclasses`` calls it (a text, its namespaces): the text compiled as
        ``exec`` compiles it, under ``<string>``."""
        if type(source) is str:
            source = self.code(source, "<string>", "exec")
        exec(source, *args, **kwargs)


SHADOWED: tuple[tuple[Any, str], ...] = ((dataclasses, "exec"), (typing, "compile"))
"""Where a module's own name for a builtin is set inside the window, shadowing the builtin for
that module alone."""


@contextmanager
def compiled_once(path: Path | None = None) -> Iterator[None]:
    """Inside, each text ``dataclasses`` and ``typing`` compile is compiled once; with ``path``,
    the code objects are read from it first and kept in it after. Nested, the outer window
    serves (the inner does nothing), and so where one of those modules already holds such a
    name (another Python's standard library): it is left as it is."""
    if any(name in vars(module) for module, name in SHADOWED):
        yield
        return
    compiler = _Compiler(read(path) if path is not None else {})
    dataclasses.exec = compiler.exec  # type: ignore[attr-defined]
    typing.compile = compiler.compile  # type: ignore[attr-defined]
    try:
        yield
    finally:
        for module, name in SHADOWED:
            delattr(module, name)
        if path is not None and compiler.missed and not sys.dont_write_bytecode:
            write(path, compiler.used)


def cache_file(name: str, env: Mapping[str, str] = os.environ) -> Path | None:
    """Where the code of ``name``'s import is kept: the user's cache directory
    (``$XDG_CACHE_HOME``, else ``~/.cache``), ``noon/``, a file per import, interpreter and
    optimization level (``python -O`` compiles asserts away); None where there is no such
    directory or no bytecode tag."""
    tag = sys.implementation.cache_tag
    base = env.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):  # unset, empty or relative: the spec says to ignore it
        home = env.get("HOME", "")
        if not os.path.isabs(home):
            return None
        base = os.path.join(home, ".cache")
    if tag is None:
        return None
    optimized = f".opt-{sys.flags.optimize}" if sys.flags.optimize else ""  # as a .pyc's name
    return Path(base, "noon", f"{name}.{tag}-{MAGIC_NUMBER.hex()}{optimized}.code")


def read(path: Path) -> dict[Key, CodeType]:
    """The code objects kept in ``path``; none where it is missing, unreadable, not this user's
    alone to write, or not what :func:`write` writes."""
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            if st.st_uid != os.getuid() or st.st_mode & 0o022:
                return {}
            kept = marshal.loads(f.read())
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    if not isinstance(kept, dict) or not all(type(c) is CodeType for c in kept.values()):
        return {}
    return kept


def write(path: Path, codes: dict[Key, CodeType]) -> None:
    """Replace ``path`` with ``codes`` at once (a reader sees the old file or the new one, never
    part of one); nothing where the directory cannot be made or written."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(marshal.dumps(codes))
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    except OSError:
        return
