"""docker-compose.yml and the Dockerfile, checked as far as a machine without an image registry can: the compose
file against Compose's own schema (`docker-compose config`, where it is installed; Debian's docker-compose package),
and both files against the code they start: every AUTOGRADER_ variable is a setting, every command is one of the
CLI's, the image installs what the Makefile installs (less the dev extras) and copies every package it needs.

What is not done here: building the image and starting the stack (no registry to pull python:3.11-slim, postgres
and redis from). docs/operations.md, "Scaling out", says so."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import tomllib

import pytest
import yaml
from typer.main import get_command

from app.cli.main import app as cli
from app.config import Settings
from tests.conftest import REPO

COMPOSE = REPO / "docker-compose.yml"
DOCKERFILE = REPO / "Dockerfile"


def compose() -> dict:  # type: ignore[type-arg]
    return yaml.safe_load(COMPOSE.read_text())  # type: ignore[no-any-return]


def test_compose_file_passes_composes_own_validation() -> None:
    tool = shutil.which("docker-compose")
    if tool is None:
        pytest.skip("docker-compose is not installed (Debian: apt-get install docker-compose)")
    env = {"PATH": "/usr/bin:/bin", "AUTOGRADER_SECRET_KEY": "k" * 40}
    done = subprocess.run([tool, "-f", str(COMPOSE), "config", "-q"], env=env, capture_output=True, text=True,
                          check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    # Without a secret key the stack refuses to start, naming the variable (no placeholder default).
    refused = subprocess.run([tool, "-f", str(COMPOSE), "config", "-q"], env={"PATH": env["PATH"]},
                             capture_output=True, text=True, check=False)  # fmt: skip
    assert refused.returncode != 0 and "AUTOGRADER_SECRET_KEY" in refused.stderr


def test_every_variable_of_the_stack_is_a_setting() -> None:
    fields = {f"AUTOGRADER_{name.upper()}" for name in Settings.model_fields}
    names = set(re.findall(r"AUTOGRADER_[A-Z0-9_]+", COMPOSE.read_text() + DOCKERFILE.read_text()))
    assert names and names <= fields, sorted(names - fields)


def test_every_command_is_one_of_the_cli() -> None:
    commands = get_command(cli).commands  # type: ignore[attr-defined]
    services = compose()["services"]
    started = [services[name]["command"] for name in ("api", "worker")]
    cmd = re.search(r"^CMD (\[.*\])$", DOCKERFILE.read_text(), re.M)
    assert cmd is not None
    started.append(yaml.safe_load(cmd.group(1)))
    for argv in started:
        assert argv[0] == "autograder" and argv[1] in commands, argv
        options = {p.opts[0] for p in commands[argv[1]].params if p.opts}
        flags = {a.split("=")[0] for a in argv[2:] if a.startswith("--")}
        assert flags <= options, (argv, sorted(flags - options))
    # The worker's healthcheck looks for the process the command starts.
    assert "autograder worker" in " ".join(services["worker"]["healthcheck"]["test"])


def test_the_image_installs_what_the_makefile_installs_and_copies_every_package() -> None:
    dockerfile = DOCKERFILE.read_text()
    makefile = (REPO / "Makefile").read_text()
    make_install = re.search(r"pip install -q (-c constraints.txt -e '\.\[dev\]')", makefile)
    image_install = re.search(r"pip install --no-cache-dir (-c constraints.txt -e \.)\n", dockerfile)
    assert make_install is not None and image_install is not None
    # The same constraints and editable install; the image leaves out only the dev extras.
    assert shlex.split(make_install.group(1)) == [*shlex.split(image_install.group(1))[:-1], ".[dev]"]
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    packages = [p.rstrip("*") for p in project["tool"]["setuptools"]["packages"]["find"]["include"]]
    copied = set(re.findall(r"^COPY (\S+) \1$", dockerfile, re.M))
    # The code, the migrations `serve` runs and the problems it loads are in the image.
    assert {*packages, "migrations", "problems"} <= copied, sorted({*packages, "migrations", "problems"} - copied)
    assert "bubblewrap" in dockerfile  # the sandbox, as `make sandbox-deps` installs it
