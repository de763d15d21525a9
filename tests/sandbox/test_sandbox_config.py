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
        assert not src.startswith(str(repo / "checklibs"))
    for flag in ("--unshare-net", "--unshare-pid", "--die-with-parent", "--clearenv"):
        assert flag in argv


def test_the_checker_sees_the_engine_and_the_check_libraries_but_not_the_rest(tmp_path):
    """A set's checks import graders.code.check_api and checklibs/; the service's app/, the tests and the other
    sets' folders under problems/ stay out of its jail."""
    set_root = tmp_path / "set"
    set_root.mkdir()
    argv = jail.checker_argv(SandboxConfig(), 3, 4, 12345, set_root)
    binds = {argv[i + 2]: argv[i + 1] for i, a in enumerate(argv) if a in ("--ro-bind", "--bind", "--dev-bind")}
    repo = support.REPO_ROOT
    assert binds[f"{jail.JAIL_ROOT}/src/graders"] == str(repo / "graders")
    assert binds[f"{jail.JAIL_ROOT}/src/checklibs"] == str(repo / "checklibs")
    assert binds[jail.CHECKER_SET] == str(set_root.resolve())
    for src in binds.values():
        assert src != str(repo) and not src.startswith(tuple(str(repo / name) for name in ("app", "tests", "problems")))


def test_a_hidden_path_holding_a_needed_path_is_refused():
    with pytest.raises(SandboxError, match="hidden path"):
        jail.zygote_argv(SandboxConfig(hidden_paths=[jail.SANDBOX_PACKAGE.parent]), 3, jail.JAIL_WORK)
