"""The pip environment (requirements.txt) and the conda/Binder one (environment.yml) agree."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONDA_NAMES = {"pytorch-cpu": "torch"}  # conda-forge name -> PyPI name
NOT_PACKAGES = {"python", "pip"}


def pip_pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, version = line.split("==")
            pins[name.lower()] = version
    return pins


def conda_pins() -> dict[str, str]:
    pins = {}
    text = (ROOT / "environment.yml").read_text()
    for line in text.split("dependencies:", 1)[1].splitlines():
        match = re.match(r"^  - ([A-Za-z0-9_.-]+)(?:=([^\s#]+))?\s*$", line) or re.match(
            r"^      - ([A-Za-z0-9_.-]+)==([^\s#]+)\s*$", line
        )  # the pip: section
        if match:
            name, version = match.groups()
            if name not in NOT_PACKAGES:
                pins[CONDA_NAMES.get(name, name).lower()] = version or ""
    return pins


def test_both_environments_list_the_same_packages():
    assert sorted(pip_pins()) == sorted(conda_pins())


def test_conda_versions_match_the_pip_pins():
    pip = pip_pins()
    for name, version in conda_pins().items():
        assert version, f"{name} has no version in environment.yml"
        assert pip[name] == version or pip[name].startswith(version + "."), (name, version, pip[name])


def test_torch_is_pinned_exactly_to_the_measured_cpu_build():
    assert pip_pins()["torch"] == "2.13.0"
    assert conda_pins()["torch"] == "2.13.0"


def test_binder_installs_the_package_itself():
    assert re.search(r"^\s+- -e \.\s*$", (ROOT / "environment.yml").read_text(), re.M)


def test_every_runtime_dependency_of_the_package_is_in_both_environments():
    text = (ROOT / "pyproject.toml").read_text()
    block = text.split("dependencies = [", 1)[1].split("]", 1)[0]
    needed = {re.match(r'\s*"([A-Za-z0-9_.-]+)', line).group(1).lower() for line in block.splitlines() if '"' in line}
    assert needed <= set(pip_pins()) and needed <= set(conda_pins())


def test_the_lab_environment_starts_the_warm_process_with_each_kernel():
    """`make setup` (and Binder's postBuild) install the kernel config that loads src/barrierlab_kernel.py."""
    import os
    import stat

    import barrierlab_kernel

    path = barrierlab_kernel.config_path()
    assert os.path.isfile(path), f"{path} is missing: run `python -m barrierlab_kernel install`"
    assert Path(path).read_text().startswith(barrierlab_kernel.MARKER)
    post_build = ROOT / "postBuild"
    assert post_build.stat().st_mode & stat.S_IXUSR, "repo2docker runs postBuild only if it is executable"
    assert "python -m barrierlab_kernel install" in post_build.read_text()
    assert "-m barrierlab_kernel install" in (ROOT / "Makefile").read_text()
