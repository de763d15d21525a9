"""CUDA mode binds the NVIDIA device nodes and the few /sys entries the driver reads, not all of /dev or /sys.

Before, a GPU worker's jail got a read-only bind of the whole host /sys (every device, /sys/kernel, /sys/fs/cgroup,
firmware tables). CUDA cannot run on this host (no GPU), so the bind list is built from a fake /dev and /sys that
look like a GPU host's, checked as a list, and handed to bubblewrap to see what the jail then contains. The GPU
tests themselves (tests/checklibs/attention/test_gpu.py) skip without CUDA.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from graders.sandbox import jail
from graders.sandbox.config import SandboxConfig
from tests.sandbox import support

GPU_PCI = "0000:3b:00.0"
GPU_PATH = f"devices/pci0000:3a/0000:3a:00.0/{GPU_PCI}"
NIC_PCI = "0000:5e:00.0"


def fake_host(root: Path) -> tuple[Path, Path]:
    """A /dev and a /sys with two GPUs' nodes, MIG caps, an NVIDIA PCI device and decoys of every kind."""
    dev, sys_ = root / "dev", root / "sys"
    dev.mkdir()
    for name in ("nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset"):
        (dev / name).write_text("")
    (dev / "nvidia-caps").mkdir()
    (dev / "nvidia-caps" / "nvidia-cap1").write_text("")
    for decoy in ("sda", "nvme0n1", "null", "nvidia-not-a-node", "nvidiafoo"):
        (dev / decoy).write_text("")
    (dev / "nvidia2").symlink_to("sda")  # a link is never followed
    for path, vendor in ((GPU_PATH, "0x10de"), (f"devices/pci0000:5d/{NIC_PCI}", "0x8086")):
        device = sys_ / path
        device.mkdir(parents=True)
        (device / "vendor").write_text(vendor + "\n")
        (device / "numa_node").write_text("0\n")
    links = sys_ / "bus" / "pci" / "devices"
    links.mkdir(parents=True)
    (links / GPU_PCI).symlink_to(f"../../../{GPU_PATH}")
    (links / NIC_PCI).symlink_to(f"../../../devices/pci0000:5d/{NIC_PCI}")
    for entry in ("module/nvidia/parameters", "module/nvidia_uvm", "devices/system/cpu", "devices/system/node"):
        (sys_ / entry).mkdir(parents=True)
    (sys_ / "module" / "nvidia" / "version").write_text("575.57\n")
    for decoy in ("kernel/security", "fs/cgroup", "firmware/acpi", "module/e1000e", "class/net"):
        (sys_ / decoy).mkdir(parents=True)
    return dev, sys_


def _pairs(opts: list[str], flag: str) -> list[tuple[str, str]]:
    return [(opts[i + 1], opts[i + 2]) for i, arg in enumerate(opts) if arg == flag]


def test_the_bind_list_names_only_the_gpu_nodes_and_the_drivers_sysfs(tmp_path: Path) -> None:
    dev, sys_ = fake_host(tmp_path)
    opts = jail.gpu_binds(dev, sys_)
    assert sorted(dest for _, dest in _pairs(opts, "--dev-bind")) == [
        "/dev/nvidia-caps",
        "/dev/nvidia-modeset",
        "/dev/nvidia-uvm",
        "/dev/nvidia-uvm-tools",
        "/dev/nvidia0",
        "/dev/nvidia1",
        "/dev/nvidiactl",
    ]
    assert all(Path(src).parent in (dev, dev / "nvidia-caps") for src, _ in _pairs(opts, "--dev-bind"))
    assert sorted(dest for _, dest in _pairs(opts, "--ro-bind")) == [
        f"/sys/{GPU_PATH}",
        "/sys/devices/system/cpu",
        "/sys/devices/system/node",
        "/sys/module/nvidia",
        "/sys/module/nvidia_uvm",
    ]
    assert _pairs(opts, "--symlink") == [(f"../../../{GPU_PATH}", f"/sys/bus/pci/devices/{GPU_PCI}")]
    text = " ".join(opts)
    for absent in ("sda", "nvme", "null", "nvidia2", "nvidiafoo", "not-a-node", NIC_PCI, "kernel", "cgroup"):
        assert absent not in text, absent


def test_a_gpu_worker_on_a_host_without_gpus_binds_no_sys_at_all(tmp_path: Path) -> None:
    """The old list bound /sys whole whatever was found; now nothing of it (nor of /dev) without an NVIDIA device."""
    opts = jail._bwrap_options(SandboxConfig(mode="bwrap", device="cuda"), jail._binds(SandboxConfig()))
    assert ("/sys", "/sys") not in _pairs(opts, "--ro-bind")
    empty = tmp_path / "empty"
    (empty / "dev").mkdir(parents=True)
    (empty / "sys" / "devices" / "system" / "cpu").mkdir(parents=True)
    assert jail.gpu_binds(empty / "dev", empty / "sys") == []
    if not any(Path("/dev").glob("nvidia*")) and not Path("/sys/module/nvidia").exists():
        assert not any(arg.startswith("/sys") for arg in opts), opts
        assert "--dev-bind" not in opts


def test_the_jail_sees_exactly_the_bound_entries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real bubblewrap command line of a CUDA zygote, built from the fake host: what exists inside the jail."""
    support.require_jail()
    dev, sys_ = fake_host(tmp_path)
    monkeypatch.setattr(jail, "GPU_DEV_ROOT", dev)
    monkeypatch.setattr(jail, "GPU_SYS_ROOT", sys_)
    config = SandboxConfig(mode="bwrap", device="cuda")
    opts = jail._bwrap_options(config, jail._binds(config))
    listing = "import os\nfor top in ('/sys', '/dev'):\n    for d, dirs, files in os.walk(top):\n"
    listing += "        for n in dirs + files:\n            print(os.path.join(d, n))\n"
    done = subprocess.run(
        [*opts, str(jail.python_binary()), "-I", "-S", "-c", listing], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    seen = set(done.stdout.split())
    gpu = {"/dev/nvidia0", "/dev/nvidia1", "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"}
    assert gpu | {"/dev/nvidia-modeset", "/dev/nvidia-caps/nvidia-cap1"} <= seen, sorted(seen)
    assert {"/sys/module/nvidia/version", f"/sys/{GPU_PATH}/numa_node", f"/sys/bus/pci/devices/{GPU_PCI}"} <= seen
    roots = [f"/sys/{GPU_PATH}", f"/sys/bus/pci/devices/{GPU_PCI}", "/sys/module/nvidia", "/sys/module/nvidia_uvm"]
    roots += ["/sys/devices/system/cpu", "/sys/devices/system/node"]
    # Inside a bound tree, or one of the directories leading to one: nothing else.
    stray = {
        p
        for p in seen
        if p.startswith("/sys/") and not any(p == r or p.startswith(r + "/") or r.startswith(p + "/") for r in roots)
    }
    assert not stray, sorted(stray)  # no /sys/kernel, /sys/fs/cgroup, /sys/class, other PCI devices
    assert not {p for p in seen if p.startswith("/dev/") and os.path.basename(p) in ("sda", "nvme0n1", "nvidia2")}
