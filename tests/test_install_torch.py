"""`make setup` installs the CPU build of torch on a Linux machine without an NVIDIA GPU, the CUDA build when asked
(or when a GPU is present), and never waits long for an index it cannot reach (scripts/install_torch.py)."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "install_torch.py"
_spec = importlib.util.spec_from_file_location("install_torch", SCRIPT)
install_torch = importlib.util.module_from_spec(_spec)
sys.modules["install_torch"] = install_torch  # dataclasses look their module up
_spec.loader.exec_module(install_torch)

#: "A few seconds": what an unreachable index may add to setup before it falls back.
FALLBACK_BOUND = install_torch.PROBE_TIMEOUT + 2.0


@pytest.fixture
def closed_port():
    """A 127.0.0.1 port that refuses connections (bound, never listening)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


@pytest.fixture
def silent_port():
    """A 127.0.0.1 port that accepts connections and never answers, like a firewall that drops packets."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield sock.getsockname()[1]


def test_linux_without_a_gpu_gets_the_cpu_build():
    assert install_torch.decide("auto", gpu=False, system="Linux").build == "cpu"


def test_linux_with_a_gpu_gets_the_default_index_cuda_build():
    assert install_torch.decide("auto", gpu=True, system="Linux").build == "default"


def test_the_user_can_ask_for_the_cuda_build_without_a_gpu():
    assert install_torch.decide("cuda", gpu=False, system="Linux").build == "default"


def test_the_user_can_ask_for_the_cpu_build_with_a_gpu():
    assert install_torch.decide("CPU", gpu=True, system="Linux").build == "cpu"


def test_macos_uses_the_default_index_whose_wheels_are_cpu_builds():
    assert install_torch.decide("auto", gpu=False, system="Darwin").build == "default"


def test_an_unknown_setting_is_refused_with_the_choices():
    with pytest.raises(ValueError, match="auto, cpu, cuda"):
        install_torch.decide("rocm", gpu=False, system="Linux")


def test_a_gpu_is_found_by_its_driver_file_or_nvidia_smi(tmp_path):
    driver = tmp_path / "version"
    none = lambda name: None  # noqa: E731
    assert not install_torch.has_nvidia_gpu(str(driver), which=none)
    assert install_torch.has_nvidia_gpu(str(driver), which=lambda name: "/usr/bin/nvidia-smi")
    driver.write_text("NVRM version: 550.54\n")
    assert install_torch.has_nvidia_gpu(str(driver), which=none)


def test_the_pin_is_read_from_requirements_txt():
    assert install_torch.pinned_torch() == "torch==2.13.0"


def test_the_cpu_index_is_an_extra_index_so_other_packages_still_come_from_the_default():
    command = install_torch.pip_command("py", "torch==2.13.0", install_torch.CPU_INDEX)
    assert command[-3:] == ["torch==2.13.0", "--extra-index-url", "https://download.pytorch.org/whl/cpu"]
    assert "--extra-index-url" not in install_torch.pip_command("py", "torch==2.13.0", None)


@pytest.mark.parametrize("port_fixture", ["closed_port", "silent_port"])
def test_an_unreachable_index_falls_back_to_the_default_within_seconds(port_fixture, request):
    index = f"http://127.0.0.1:{request.getfixturevalue(port_fixture)}/whl/cpu"
    started = time.monotonic()
    chosen, notes = install_torch.plan("auto", gpu=False, system="Linux", index=index)
    assert time.monotonic() - started < FALLBACK_BOUND
    assert chosen is None
    assert "cannot be reached" in notes[-1] and "default index" in notes[-1]


def test_a_name_lookup_that_never_answers_falls_back_within_seconds(monkeypatch):
    """urlopen's timeout does not cover the name lookup: a resolver that holds getaddrinfo (here for 60 s) must
    not hold setup (review94r)."""

    release = threading.Event()

    def slow_lookup(*args, **kwargs):
        release.wait(60)
        raise socket.gaierror("no answer")

    monkeypatch.setattr(socket, "getaddrinfo", slow_lookup)
    started = time.monotonic()
    try:
        chosen, notes = install_torch.plan("auto", gpu=False, system="Linux", index="http://index.invalid/whl/cpu")
    finally:
        release.set()
    assert time.monotonic() - started < FALLBACK_BOUND
    assert chosen is None
    assert "no answer within" in notes[-2] + notes[-1] and "default index" in notes[-1], notes


def test_a_reachable_index_is_used(tmp_path):
    """A local index that answers (a throwaway HTTP server on 127.0.0.1) is the one pip is given."""
    (tmp_path / "whl" / "cpu" / "torch").mkdir(parents=True)
    (tmp_path / "whl" / "cpu" / "torch" / "index.html").write_text("<html></html>")
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        line = server.stdout.readline()  # "Serving HTTP on 127.0.0.1 port NNNN ..."
        port = int(line.split(" port ")[1].split()[0])
        index = f"http://127.0.0.1:{port}/whl/cpu"
        chosen, notes = install_torch.plan("auto", gpu=False, system="Linux", index=index)
    finally:
        server.terminate()
        server.wait(10)
    assert chosen == index, notes


def test_the_script_says_what_it_would_install_and_falls_back_in_seconds(closed_port):
    env = {
        **os.environ,
        "BARRIERLAB_TORCH": "cpu",
        "BARRIERLAB_TORCH_INDEX": f"http://127.0.0.1:{closed_port}/whl/cpu",
    }
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--print-only"], env=env, capture_output=True, text=True, timeout=30
    )
    assert time.monotonic() - started < FALLBACK_BOUND + 2.0  # + the interpreter's start
    assert done.returncode == 0, done.stderr
    assert "cannot be reached" in done.stdout
    assert (
        done.stdout.strip().splitlines()[-1].endswith("pip install --quiet --disable-pip-version-check torch==2.13.0")
    )


def test_a_wrong_setting_stops_the_script_before_anything_is_installed():
    env = {**os.environ, "BARRIERLAB_TORCH": "gpu"}
    done = subprocess.run([sys.executable, str(SCRIPT), "--print-only"], env=env, capture_output=True, text=True)
    assert done.returncode == 2 and "must be one of" in done.stderr


def test_the_installed_build_is_named():
    """This environment's torch (the pinned CPU build here) is reported as such."""
    assert install_torch.installed_build(sys.executable).startswith("torch 2.13.0")
    assert install_torch.installed_build(sys.executable).endswith("CPU build")
