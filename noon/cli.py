"""The ``noon`` command. Each subcommand lives in its own module, which provides
``configure(parser)`` and ``run(args) -> int``; this file only routes to them."""

from __future__ import annotations

import argparse
import functools
import gc
import importlib
import logging
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from noon import logging_setup
from noon.codecache import cache_file, compiled_once
from noon.commands.terminal import visible
from noon.core.gcpause import paused
from noon.errors import NoonError

COMMANDS: dict[str, tuple[str, str]] = {
    # name: (module, one-line help)
    "serve": ("noon.mcp.command", "run the MCP server (stdio by default)"),
    "web": ("noon.web.command", "the page: browse, edit, review and undo what agents remember"),
    "import": ("noon.transfer.import_command", "import memories from another server or an export"),
    "export": (
        "noon.transfer.export_command",
        "export everything, or a Markdown folder, or memory.jsonl",
    ),
    "status": ("noon.commands.status", "show this node, its shards, peers and conflicts"),
    "compact": ("noon.commands.compact", "drop superseded operations from the shards"),
    "certs": ("noon.commands.certs", "create the private CA and issue node certificates"),
    "peers": ("noon.commands.peers", "list, depart or revoke peers"),
    "log": ("noon.commands.log", "recent changes: who changed what, from which machine, when"),
    "history": ("noon.commands.history", "every version of one memory (URI) and who wrote it"),
    "query": ("noon.commands.query", "search URI memories and the knowledge graph"),
    "doctor": ("noon.commands.doctor", "check this node's setup and say how to fix problems"),
    "reindex": ("noon.commands.reindex", "rebuild this machine's read model from the shards"),
    "demo": ("noon.demo", "start three local nodes and watch memories replicate"),
}


def version() -> str:
    from noon.package import installed_version  # read only when asked: finding it costs a start

    return installed_version() or "unknown (not installed: pip install -e . in the checkout)"


class _PrintVersion(argparse.Action):
    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        print(f"noon {version()}")
        parser.exit()


def _help(parser: argparse.ArgumentParser, words: list[str]) -> int:
    """``noon help [COMMAND [ACTION]]``: the same text as ``noon COMMAND [ACTION] --help``."""
    if words and words[0] not in COMMANDS:
        print(
            f"noon: no command {words[0]!r}; the commands are: {', '.join(COMMANDS)}",
            file=sys.stderr,
        )
        return 2
    if not words:
        parser.print_help()
        return 0
    try:
        parser.parse_args([*words, "--help"])
    except SystemExit as exc:  # argparse exits after printing the help (or a usage error)
        return int(exc.code or 0)
    return 0


@contextmanager
def _words_translated_once() -> Iterator[None]:
    """argparse translates its own words ("usage: ", "options", the help option's help) through
    gettext for every parser and argument, and gettext looks for message catalogues anew each
    time (environment variables, ``stat`` calls): 47 lookups of 3 words for noon's parser, about
    1 ms of every start. Inside, each word is looked up once; the environment the lookup reads
    does not change while a parser is built, so the answers are the same."""
    words: dict[str, Any] = vars(argparse)
    lookup = words.get("_")
    if not callable(lookup):  # not the argparse this was written against: leave it be
        yield
        return
    words["_"] = functools.cache(lookup)
    try:
        yield
    finally:
        words["_"] = lookup


def _command_module(name: str) -> Any:
    """The command's module. A command's start imports it (``noon serve``'s is most of a new
    session's start): with the collector paused, as the MCP SDK's part already is
    (:mod:`noon.mcp.sdk_import`), the import's young collections walk nothing; what it leaves
    lives as long as the process and is then frozen out of the collector's reach. The text the
    import compiles (dataclasses' methods, annotations) is compiled once and kept in the user's
    cache directory for the next start (:mod:`noon.codecache`)."""
    if name in sys.modules:
        return sys.modules[name]
    with paused(), compiled_once(cache_file(name)):
        module = importlib.import_module(name)
        gc.freeze()
    return module


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with ``only``, the other commands are listed but their modules
    are not imported (``noon serve`` starts for every agent session: it should not import the
    web page, the importers and the operator commands first)."""
    with _words_translated_once():
        return _parser(only)


def _parser(only: str | None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="noon",
        description="Shared, durable, conflict-free memory for AI agents across your machines.",
        epilog="Settings come from NOON_* environment variables; see the README. Start with "
        "`noon demo`; on a real machine `noon doctor` checks the setup and `noon status` shows "
        "replication. docs/operating.md describes every command.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug details")
    parser.add_argument(
        "--version", action=_PrintVersion, nargs=0, help="show noon's version and exit"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    helper = sub.add_parser(
        "help", help="show the help of a command (noon help import)", add_help=False
    )
    helper.add_argument("words", nargs="*", metavar="COMMAND")
    for name, (module_name, help_text) in COMMANDS.items():
        cmd = sub.add_parser(name, help=help_text, description=help_text)
        if only is None or name == only:
            module = _command_module(module_name)
            module.configure(cmd)
            cmd.set_defaults(run=module.run)
    return parser


def _command_of(argv: Sequence[str]) -> str | None:
    """The command ``argv`` runs, when it names one (``help`` needs every command)."""
    first = next((word for word in argv if not word.startswith("-")), None)
    return first if first in COMMANDS else None


def main(argv: Sequence[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(_command_of(words))
    args = parser.parse_args(words)
    if args.command == "help":
        return _help(parser, args.words)
    if not getattr(args, "run", None):
        parser.print_help()
        return 2
    try:
        logging_setup.setup(logging.DEBUG if args.verbose else logging.INFO)
        return int(args.run(args) or 0)
    except (NoonError, ValueError, OSError) as exc:
        print(f"noon: {visible(str(exc))}", file=sys.stderr)  # may quote stored text
        return 1


if __name__ == "__main__":
    sys.exit(main())
