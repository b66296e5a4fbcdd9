"""A program's settings as one table: each variable with its flag, type, default and help.

The code reads each value through its :class:`Setting` (so the default it uses is the one the
table says), builds its flags from the table (:meth:`Table.add_flags`), and the settings section
of the docs is the table's :meth:`Table.markdown`, kept between ``<!-- settings:NAME -->`` and
``<!-- /settings -->`` (``tests/test_settings_docs.py`` fails when they drift, and rewrites them
when run as ``python -m tests.test_settings_docs``). The type is the default's: a boolean, an
integer, seconds (a float) or text (``None``: no value, or one computed at start, which
``shown`` says in words).
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from noon.errors import NoonError

N = TypeVar("N", int, float)
Value = bool | int | float | str | None


class ConfigError(NoonError, ValueError):
    """A setting with a value noon cannot use. The message names the variable."""


def env_int(env: Mapping[str, str], name: str, default: int, lo: int = 0) -> int:
    return _env_number(env, name, default, lo, int, "an integer")


def env_float(env: Mapping[str, str], name: str, default: float, lo: float = 0.0) -> float:
    """A duration in seconds (decimals allowed)."""
    return _env_number(env, name, default, lo, float, "a number of seconds")


def _env_number(
    env: Mapping[str, str], name: str, default: N, lo: N, parse: Callable[[str], N], what: str
) -> N:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = parse(raw)
    except ValueError:
        raise ConfigError(f"{name} must be {what}, got {raw!r}") from None
    if value < lo:
        raise ConfigError(f"{name} must be at least {lo}, got {value}")
    return value


def env_bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{name} must be true or false, got {raw!r}")


@dataclass(frozen=True)
class Setting:
    env: str
    help: str
    default: Value = None
    lo: float = 0
    """The least value a number may take."""
    flag: str | None = None
    """The command-line flag that overrides the variable (``--listen``)."""
    shown: str | None = None
    """The default as the docs say it, where the value alone does not (a computed one, a size)."""
    of: str = ""
    """The type the docs name, for a setting without a default value (``integer``)."""
    field: str | None = None
    """The attribute of the program's settings object the value goes to (read by
    :meth:`read`); None: the program parses it itself."""

    @property
    def kind(self) -> str:
        if self.of:
            return self.of
        if isinstance(self.default, bool):
            return "boolean"
        if isinstance(self.default, int):
            return "integer"
        if isinstance(self.default, float):
            return "seconds"
        return "text"

    def read(self, env: Mapping[str, str]) -> Value:
        """The value ``env`` sets, checked (a bad one raises :class:`ConfigError`
        naming the variable), or the default."""
        d = self.default
        if isinstance(d, bool):
            return env_bool(env, self.env, d)
        if isinstance(d, int):
            return env_int(env, self.env, d, int(self.lo))
        if isinstance(d, float):
            return env_float(env, self.env, d, self.lo)
        return env.get(self.env, "").strip() or d

    def row(self) -> str:
        if self.shown is not None:
            default = self.shown
        elif self.default is None or self.default == "":
            default = "(none)"
        elif isinstance(self.default, bool):
            default = f"`{str(self.default).lower()}`"
        elif isinstance(self.default, float):
            default = f"`{self.default:g}`"
        else:
            default = f"`{self.default}`"
        flag = f"`{self.flag}`" if self.flag else ""
        return f"| `{self.env}` | {flag} | {self.kind} | {default} | {self.help} |"


@dataclass(frozen=True)
class Table:
    name: str
    """The marker's name in the docs (``<!-- settings:NAME -->``)."""
    doc: str
    """The file holding the section, from the repository's root."""
    settings: tuple[Setting, ...]

    def __getitem__(self, env: str) -> Setting:
        found = next((s for s in self.settings if s.env == env), None)
        if found is None:
            raise KeyError(env)
        return found

    def flags(self) -> dict[str, str]:
        """Flag destination (``--dns-srv``: ``dns_srv``) -> the variable it overrides."""
        return {s.flag[2:].replace("-", "_"): s.env for s in self.settings if s.flag}

    def add_flags(self, parser: argparse.ArgumentParser) -> None:
        """One flag per setting that has one, each overriding its variable."""
        for s in self.settings:
            if s.flag:
                helped = f"overrides {s.env}"
                parser.add_argument(s.flag, default=None, metavar="VALUE", help=helped)

    def read_fields(self, env: Mapping[str, str]) -> dict[str, Any]:
        """Every setting with a ``field``, read: keyword arguments of the program's settings
        dataclass, whose field types say what each is (``tests/test_settings_docs.py`` checks
        that every default matches the dataclass's)."""
        return {s.field: s.read(env) for s in self.settings if s.field}

    def markdown(self) -> str:
        head = "| variable | flag | type | default | meaning |\n| --- | --- | --- | --- | --- |"
        return "\n".join([head, *(s.row() for s in self.settings)])


def section(text: str, name: str) -> tuple[int, int] | None:
    """Where the generated table of ``name`` sits in ``text`` (between its markers)."""
    m = re.search(rf"<!-- settings:{re.escape(name)} -->\n(.*?)<!-- /settings -->", text, re.S)
    return None if m is None else (m.start(1), m.end(1))


def with_table(text: str, table: Table) -> str:
    """``text`` with ``table``'s section rewritten from the table."""
    found = section(text, table.name)
    if found is None:
        raise ValueError(f"{table.doc} has no <!-- settings:{table.name} --> section")
    start, end = found
    return text[:start] + table.markdown() + "\n" + text[end:]
