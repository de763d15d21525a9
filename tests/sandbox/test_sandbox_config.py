"""Configuration: the unsafe mode is refused outside dev mode, and the jail's view holds nothing it must not."""

from __future__ import annotations

import logging

import pytest

from graders.sandbox import jail
from graders.sandbox.config import SandboxConfig
from graders.sandbox.errors import SandboxError
from tests.sandbox import support


def test_unsafe_local_is_refused_without_dev_mode():
    with pytest.raises(ValueError, match="NOT A SANDBOX"):
        SandboxConfig(mode="unsafe-local")


def test_unsafe_local_warns_loudly(caplog, capsys):
    with caplog.at_level(logging.WARNING):
        SandboxConfig(mode="unsafe-local", dev_mode=True)
    assert "NOT A SANDBOX" in caplog.text
    assert "NOT A SANDBOX" in capsys.readouterr().err


def test_unknown_mode_is_refused():
    with pytest.raises(ValueError):
        SandboxConfig(mode="docker")  # type: ignore[arg-type]


def test_jail_binds_only_what_python_needs(tmp_path):
    argv = jail.zygote_argv(SandboxConfig(hidden_paths=[tmp_path]), 3, jail.JAIL_WORK)
    sources = [argv[i + 1] for i, a in enumerate(argv) if a in ("--ro-bind", "--bind", "--dev-bind")]
    repo = support.REPO_ROOT
    for src in sources:
        assert not src.startswith(str(repo / "problems")) and src != str(repo) and not src.startswith(str(tmp_path))
        assert not src.startswith(str(repo / "tests")) and not src.startswith(str(repo / "graders" / "code"))
    for flag in ("--unshare-net", "--unshare-pid", "--die-with-parent", "--clearenv"):
        assert flag in argv


def test_a_hidden_path_holding_a_needed_path_is_refused():
    with pytest.raises(SandboxError, match="hidden path"):
        jail.zygote_argv(SandboxConfig(hidden_paths=[jail.SANDBOX_PACKAGE.parent]), 3, jail.JAIL_WORK)
