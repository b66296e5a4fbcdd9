"""One settings source: every command reads flags and ``NOON_*`` variables through
``noon.config.settings_from``; server-noonien's settings are never silently ignored; ``noon
--version`` and ``noon help COMMAND``."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from noon.cli import COMMANDS, build_parser, main
from noon.config import (
    FLAGS,
    RENAMED,
    ConfigError,
    Settings,
    legacy_settings,
    settings_from,
)

REQUIRED_ARGS = {"import": ["memory.jsonl"], "history": ["core://a"], "query": ["word"]}
"""Positional arguments the commands that take ``--dir`` need to parse."""


def _parsed(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


def _flags(command: str) -> set[str]:
    sub = build_parser()._subparsers._group_actions[0].choices[command]  # type: ignore[union-attr,index]
    return {o for a in sub._actions for o in a.option_strings}


WITH_DIR = [c for c in sorted(COMMANDS) if "--dir" in _flags(c)]


def test_only_commands_without_a_memory_directory_lack_dir() -> None:
    assert set(COMMANDS) - set(WITH_DIR) == {"certs", "demo", "peers"}


@pytest.mark.parametrize("command", WITH_DIR)
def test_every_command_with_a_directory_reads_it_through_the_one_source(
    command: str, tmp_path: Path
) -> None:
    flags = _flags(command)
    argv = [command, *REQUIRED_ARGS.get(command, []), "--dir", str(tmp_path), "--node-id", "n7"]
    if "--namespace" in flags:
        argv += ["--namespace", "work"]
    settings = settings_from(build_parser().parse_args(argv), {"NOON_DIR": "/elsewhere"})
    assert (settings.dir, settings.node_id) == (tmp_path, "n7")
    if "--namespace" in flags:
        assert settings.namespace == "work"


def test_a_flag_goes_through_its_variable_s_checks() -> None:
    with pytest.raises(ConfigError, match="NOON_NODE_ID"):
        settings_from(_parsed("status", "--node-id", "../escape"), {})
    with pytest.raises(ConfigError, match="NOON_HISTORY"):
        settings_from(argparse.Namespace(history=-1), {"NOON_DIR": "/d"})


@given(
    env_value=st.sampled_from(["", "3", "9"]),
    flag=st.one_of(st.none(), st.integers(0, 50)),
)
def test_a_flag_wins_over_its_variable_and_the_variable_over_the_default(
    env_value: str, flag: int | None
) -> None:
    env = {"NOON_DIR": "/d", "NOON_HISTORY": env_value}
    got = settings_from(argparse.Namespace(history=flag), env).history
    assert got == (flag if flag is not None else int(env_value or 10))


def test_boolean_and_secret_flags() -> None:
    s = settings_from(argparse.Namespace(sole_writer=True, token="s3cret"), {"NOON_DIR": "/d"})
    assert s.sole_writer and s.token == "s3cret"
    assert "s3cret" not in repr(s)
    assert not settings_from(None, {"NOON_DIR": "/d"}).sole_writer
    assert set(FLAGS.values()) <= {f"NOON_{n}" for n in ("DIR", "NODE_ID", "NAMESPACE")} | {
        "NOON_HISTORY",
        "NOON_SOLE_WRITER",
        "NOON_TOKEN",
    }


# -- server-noonien's settings ---------------------------------------------------------------


def test_noonien_variables_without_noon_dir_are_refused_with_the_renames(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "NOONIEN_DIR": "~/.noonien", "NOONIEN_NODE_ID": "laptop"}
    with pytest.raises(ConfigError) as err:
        Settings.from_env(env)
    text = str(err.value)
    assert "NOONIEN_DIR -> rename to NOON_DIR" in text
    assert "NOONIEN_NODE_ID -> rename to NOON_NODE_ID" in text
    assert "noon import ~/.noonien" in text
    assert not (tmp_path / ".noon").exists()


def test_noonien_variables_beside_noon_dir_are_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    env = {"NOON_DIR": str(tmp_path), "NOONIEN_NODE_ID": "laptop", "NOONIEND_PEERS": "x:1"}
    with caplog.at_level(logging.WARNING, "noon.config"):
        settings = Settings.from_env(env)
    assert settings.dir == tmp_path
    assert "NOONIEN_NODE_ID -> rename to NOON_NODE_ID" in caplog.text
    assert "NOONIEND_PEERS -> rename to NOOND_PEERS" in caplog.text
    # a variable whose noon equivalent is set was decided: not mentioned
    caplog.clear()
    with caplog.at_level(logging.WARNING, "noon.config"):
        Settings.from_env({**env, "NOON_NODE_ID": "laptop", "NOOND_PEERS": "x:1"})
    assert caplog.text == ""


def test_the_noonien_directory_without_a_noon_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / ".noonien").mkdir()
    env = {"HOME": str(tmp_path)}
    with pytest.raises(ConfigError, match=r"holds server-noonien's memory.*noon import"):
        Settings.from_env(env)
    # the remedies: an import (which is how it comes over), or naming the directory
    assert Settings.from_env(env, migrating=True).dir == tmp_path / ".noon"
    assert Settings.from_env({**env, "NOON_DIR": str(tmp_path / "new")}).dir == tmp_path / "new"
    (tmp_path / ".noon").mkdir()
    assert Settings.from_env(env).dir == tmp_path / ".noon"


def test_unsupported_noonien_settings_say_why() -> None:
    found = legacy_settings({"NOONIEN_BACKEND": "s3", "NOONIEN_S3_BUCKET": "b"}, explicit_dir=True)
    assert any("NOONIEN_BACKEND" in f and "no S3" in f for f in found)
    assert any("NOONIEN_S3_BUCKET" in f and "copy the shard objects" in f for f in found)


@given(st.sets(st.sampled_from(sorted(RENAMED)), max_size=6), st.booleans())
def test_every_renamed_variable_is_named_until_its_equivalent_is_set(
    names: set[str], decided: bool
) -> None:
    env = {n: "x" for n in names}
    if decided:
        env |= {RENAMED[n].split(" ", 1)[0]: "x" for n in names}
    found = legacy_settings(env, explicit_dir=True)
    assert len(found) == (0 if decided else len(names))
    for n in names if not decided else ():
        assert any(f.startswith(f"{n} -> rename to {RENAMED[n]}") for f in found)


def test_serve_refuses_to_start_beside_noonien_settings(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("NOONIEN_DIR", str(tmp_path / ".noonien"))
    assert main(["serve"]) == 1
    err = capsys.readouterr().err
    assert "NOONIEN_DIR -> rename to NOON_DIR" in err
    assert list(tmp_path.iterdir()) == []


# -- --version and help ----------------------------------------------------------------------


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("noon ") and out.split()[1][0].isdigit()


def test_help_of_a_command_and_of_an_action(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["help", "import"]) == 0
    assert "usage: noon import" in capsys.readouterr().out
    assert main(["help", "peers", "depart"]) == 0
    out = capsys.readouterr().out
    assert "usage: noon peers depart" in out and "replica" in out
    assert main(["help"]) == 0
    assert "COMMAND" in capsys.readouterr().out
    assert main(["help", "nonsense"]) == 2
    assert "the commands are: serve" in capsys.readouterr().err


def test_peers_depart_help_says_the_replica_stays(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["help", "peers", "depart"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "its replica and the memories it wrote stay" in out
    assert "delete its replica" not in out
