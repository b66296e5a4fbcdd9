"""``noon certs`` and ``noon peers`` say a refusal as every command does (noon.cli.main): on
stderr as ``noon: message`` with what to do, exit status 1, nothing on stdout, nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from noon.cli import main


def _refused(capsys: pytest.CaptureFixture[str], *words: str) -> str:
    assert main(list(words)) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("noon: ") and err.count("\n") == 1, err
    return err


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("NOON_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("NOON_NODE_ID", "here")
    monkeypatch.setenv("NOON_CA_DIR", str(tmp_path / "ca"))
    return tmp_path


def test_certs_refusals_go_to_stderr_with_what_to_do(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for action in ("issue", "sign"):
        err = _refused(capsys, "certs", action, "laptop")
        assert "create the CA first with `noon certs init`" in err
    err = _refused(capsys, "certs", "revoke", "laptop")
    assert "revoking needs the CA's key (--ca-dir)" in err
    assert not (home / "data").exists(), "nothing written"

    assert main(["certs", "init"]) == 0
    assert "CA created" in capsys.readouterr().out
    assert "`noon certs init --force` replaces it" in _refused(capsys, "certs", "init")
    assert "invalid node id" in _refused(capsys, "certs", "issue", "../evil")
    assert main(["certs", "issue", "laptop"]) == 0
    assert "issued" in capsys.readouterr().out
    assert "`--force` re-issues" in _refused(capsys, "certs", "issue", "laptop")
    assert main(["certs", "issue", "laptop", "--force"]) == 0  # works as the message says
    capsys.readouterr()
    assert "`--force` issues a new" in _refused(capsys, "certs", "sign", "laptop")
    assert main(["certs", "relay-key"]) == 0
    capsys.readouterr()
    assert "--rotate" in _refused(capsys, "certs", "relay-key")
    assert main(["certs", "relay-key", "--rotate"]) == 0
    assert "epoch 2" in capsys.readouterr().out


def test_peers_refusals_go_to_stderr(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "invalid node id '../x'" in _refused(capsys, "peers", "depart", "../x")
    assert "this is the local node" in _refused(capsys, "peers", "revoke", "here")
