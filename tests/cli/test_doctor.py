"""`autograder doctor` on this host: only what the test itself can know is asserted (bwrap's presence, root, limits)."""

from __future__ import annotations

import json
import os
import resource
import shutil

import pytest
from typer.testing import CliRunner

from app.cli.main import app
from graders.sandbox import cgroups

KEYS = {
    "ok",
    "problems",
    "bubblewrap",
    "root",
    "cgroup_v1",
    "cgroup_v2",
    "isolation",
    "enforcement",
    "seccomp",
    "user_namespaces",
    "pid_namespace_init",
    "fd_limit",
}


def _doctor(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, ["doctor", *args])


def test_json_report_states_what_this_host_has() -> None:
    result = _doctor("--json")
    doc = json.loads(result.output)
    assert set(doc) == KEYS
    assert doc["bubblewrap"]["found"] == (shutil.which("bwrap") is not None)
    assert doc["root"] == {"euid": os.geteuid(), "is_root": os.geteuid() == 0}
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert doc["fd_limit"] == {"soft": soft, "hard": hard}
    assert set(doc["cgroup_v1"]) == {"memory", "pids", "cpu", "cpuacct"}
    assert isinstance(doc["cgroup_v2"]["mounted"], bool)
    assert doc["user_namespaces"]["used_by_sandbox"] is False
    # A safe sandbox needs bubblewrap that starts a jail, root and seccomp; the exit status says the same.
    expected_ok = doc["bubblewrap"]["runs"] and doc["root"]["is_root"] and doc["seccomp"]["available"]
    assert doc["ok"] == expected_ok and doc["ok"] == (not doc["problems"])
    assert result.exit_code == (0 if doc["ok"] else 1)
    if doc["ok"]:  # then the bounds are the ones the sandbox picks on this host
        memory = doc["enforcement"]["memory"]
        level = cgroups.level(cgroups.detect())
        assert doc["isolation"]["level"] == level
        assert memory.startswith(level) if level != "threads-only" else memory.startswith("RLIMIT_AS"), memory
    else:
        assert all(v.startswith("none") for v in doc["enforcement"].values())


def test_this_host_can_run_the_sandbox() -> None:
    if shutil.which("bwrap") is None or os.geteuid() != 0:
        pytest.skip("needs bubblewrap and root, as the sandbox tests do")
    result = _doctor()
    assert result.exit_code == 0, result.output
    assert "bubblewrap         yes" in result.output
    assert "root               yes" in result.output
    assert "a safe sandbox (mode bwrap) is possible on this host" in result.output


def test_missing_bubblewrap_means_no_safe_sandbox(tmp_path) -> None:  # type: ignore[no-untyped-def]
    missing = str(tmp_path / "no-such-bwrap")
    result = _doctor("--json", "--bwrap", missing)
    assert result.exit_code == 1
    doc = json.loads(result.output)
    assert doc["ok"] is False and doc["bubblewrap"]["found"] is False
    assert any("bubblewrap is not installed" in p for p in doc["problems"])
    assert all(v.startswith("none") for v in doc["enforcement"].values())
    text = _doctor("--bwrap", missing)
    assert text.exit_code == 1 and "NO safe sandbox on this host" in text.output


@pytest.mark.parametrize("level", ["cgroup v1", "threads-only"])
def test_the_report_names_the_isolation_level_and_each_controller(level, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Whichever level the pool would pick (here forced to none for threads-only), doctor says it, and its bounds."""
    if level == "cgroup v1":
        if cgroups.CgroupV1.detect() is None or cgroups.CgroupV2.detect() is not None:
            pytest.skip("this host's pool does not pick cgroup v1")
    else:
        monkeypatch.setattr(cgroups, "detect", lambda: None)
    result = _doctor("--json")
    doc = json.loads(result.output)
    assert doc["isolation"]["level"] == level
    assert set(doc["isolation"]["controllers"]) >= {"memory", "pids", "cpu"}
    text = _doctor().output
    assert f"isolation          {level}" in text, text
    if not doc["ok"]:
        return
    if level == "threads-only":
        assert all(v is None for v in doc["isolation"]["controllers"].values())
        assert "threads only" in doc["enforcement"]["memory"] and "no CPU share" in doc["enforcement"]["cpu"]
    else:
        assert doc["isolation"]["controllers"]["memory"] == str(cgroups.CgroupV1.detect().memory_parent)  # type: ignore[union-attr]
        assert "cpu.shares" in doc["enforcement"]["cpu"] or "no CPU share" in doc["enforcement"]["cpu"]


def test_the_bounds_named_for_each_level() -> None:
    """What doctor says each level enforces (the level itself comes from cgroups.detect, tested above)."""
    from app.cli import doctor

    full = {"memory": "/g", "pids": "/g", "cpu": "/g"}
    v2 = doctor.enforcement(True, {"level": "cgroup v2", "controllers": full})
    assert "memory.max" in v2["memory"] and "pids.max" in v2["processes"] and "cpu.weight" in v2["cpu"]
    v2_no_cpu = doctor.enforcement(True, {"level": "cgroup v2", "controllers": full | {"cpu": None}})
    assert "no CPU share per slot" in v2_no_cpu["cpu"]
    v1 = doctor.enforcement(True, {"level": "cgroup v1", "controllers": full | {"pids": None}})
    assert v1["memory"].startswith("cgroup v1") and "no writable pids controller" in v1["processes"]
    assert "cpu.shares" in v1["cpu"]
    none = doctor.enforcement(True, {"level": "threads-only", "controllers": dict.fromkeys(full)})
    assert "threads only" in none["memory"] and "no CPU share" in none["cpu"]
