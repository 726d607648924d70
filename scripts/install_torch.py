"""Install the torch that requirements.txt pins into a virtual environment, as a CPU build unless asked otherwise.

    python scripts/install_torch.py --python .venv/bin/python     # `make setup` runs this
    BARRIERLAB_TORCH=cuda make setup                               # a machine with an NVIDIA GPU: the CUDA build

PyPI's Linux wheel of torch is the CUDA build: it pulls triton, 15 ``nvidia-*`` and 3 ``cuda-*`` packages (several
GB; docs/install.md says how that was checked). The lab runs on the CPU, so on a machine without an NVIDIA GPU this installs the same version from
PyTorch's CPU wheel index (``2.13.0+cpu``, which satisfies the ``==2.13.0`` pin). Which build:

* ``BARRIERLAB_TORCH=cpu``: the CPU index; ``cuda``: the default index (PyPI: CUDA build on Linux);
  ``auto`` (default): the CPU index on Linux without an NVIDIA GPU, the default index otherwise (with a GPU,
  or on macOS and Windows, where PyPI's wheels are already CPU builds).
* An NVIDIA GPU is present when its driver is loaded (``/proc/driver/nvidia/version``) or ``nvidia-smi`` is on
  PATH.
* If the CPU index cannot be reached within a few seconds (offline, a firewall, a proxy that only passes PyPI),
  it says so and installs from the default index instead, so setup never hangs on it.
  ``BARRIERLAB_TORCH_INDEX`` names another index (a mirror).

It says which build it installed. Standard library only: it runs before anything is installed.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
#: Seconds the reachability check of the CPU index may take before setup falls back to the default index.
PROBE_TIMEOUT = 3.0
CHOICES = ("auto", "cpu", "cuda")


def pinned_torch(requirements: Path = ROOT / "requirements.txt") -> str:
    """The torch requirement exactly as requirements.txt pins it (``torch==2.13.0``)."""
    for line in requirements.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if re.match(r"^torch\s*==", line):
            return line.replace(" ", "")
    raise SystemExit(f"install_torch: {requirements} pins no torch==VERSION")


def has_nvidia_gpu(driver_file: str = "/proc/driver/nvidia/version", which=shutil.which) -> bool:
    """True when an NVIDIA driver is loaded or its ``nvidia-smi`` is installed."""
    return os.path.exists(driver_file) or which("nvidia-smi") is not None


@dataclass(frozen=True)
class Choice:
    build: str  # "cpu" or "default"
    reason: str


def decide(setting: str, gpu: bool, system: str) -> Choice:
    """Which index to install torch from, and why, for a ``BARRIERLAB_TORCH`` setting and a machine."""
    setting = (setting or "auto").strip().lower()
    if setting not in CHOICES:
        raise ValueError(f"BARRIERLAB_TORCH must be one of {', '.join(CHOICES)}, not {setting!r}")
    if setting == "cpu":
        return Choice("cpu", "BARRIERLAB_TORCH=cpu")
    if setting == "cuda":
        return Choice("default", "BARRIERLAB_TORCH=cuda: the default index (PyPI's Linux wheel is the CUDA build)")
    if system != "Linux":
        return Choice("default", f"{system}: the default index's wheels are CPU builds already")
    if gpu:
        return Choice(
            "default", "an NVIDIA GPU is present: the default index's CUDA build (BARRIERLAB_TORCH=cpu to avoid it)"
        )
    return Choice("cpu", "no NVIDIA GPU on this Linux machine: the CPU build")


def reachable(index: str, timeout: float = PROBE_TIMEOUT) -> tuple[bool, str]:
    """Whether the index answers for torch within ``timeout`` seconds, and what went wrong if not. The whole probe
    is bounded, the name lookup included (urlopen's ``timeout`` covers the connection and the reads, not
    ``getaddrinfo``, which a slow or missing resolver can hold for much longer): it runs in a daemon thread that is
    left behind if it does not answer in time."""
    url = index.rstrip("/") + "/torch/"
    started = time.monotonic()
    answer: list[tuple[bool, str]] = []

    def probe() -> None:
        try:
            with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=timeout) as response:
                answer.append((200 <= response.status < 400, f"HTTP {response.status}"))
        except urllib.error.HTTPError as error:
            answer.append((False, f"HTTP {error.code} from {url}"))
        except (OSError, ValueError) as error:
            reason = getattr(error, "reason", error)
            answer.append((False, f"{url}: {reason} (after {time.monotonic() - started:.1f} s)"))

    thread = threading.Thread(target=probe, name="install_torch-probe", daemon=True)
    thread.start()
    thread.join(timeout)
    if answer:
        return answer[0]
    return False, f"{url}: no answer within {timeout:g} s (the name lookup or the connection)"


def pip_command(python: str, requirement: str, index: str | None) -> list[str]:
    """pip install of torch alone; with ``index`` as an extra index, where ``+cpu`` outranks PyPI's build."""
    command = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", requirement]
    if index:
        command += ["--extra-index-url", index]
    return command


def plan(setting: str, gpu: bool, system: str, index: str, probe=reachable) -> tuple[str | None, list[str]]:
    """The index to use (None: the default) and the lines to tell the user."""
    choice = decide(setting, gpu, system)
    notes = [f"install_torch: {choice.reason}"]
    if choice.build != "cpu":
        return None, notes
    ok, why = probe(index)
    if ok:
        notes.append(f"install_torch: from PyTorch's CPU index {index}")
        return index, notes
    notes.append(f"install_torch: the CPU index cannot be reached ({why}); using the default index instead")
    return None, notes


def installed_build(python: str) -> str:
    """What the environment's torch is, in words (``torch 2.13.0+cpu, CPU build``), read from torch/version.py."""
    code = (
        "import importlib.util, pathlib; spec = importlib.util.find_spec('torch'); "
        "print(pathlib.Path(spec.submodule_search_locations[0], 'version.py').read_text() if spec else '')"
    )
    done = subprocess.run([python, "-c", code], capture_output=True, text=True)
    version = re.search(r"^__version__\s*=\s*'([^']+)'", done.stdout, re.M)
    if done.returncode != 0 or not version:
        return "no torch"
    cuda = re.search(r"^cuda\b[^=]*=\s*'([^']+)'", done.stdout, re.M)
    return f"torch {version[1]}, " + (f"CUDA {cuda[1]} build" if cuda else "CPU build")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable, help="the environment's Python (default: this one)")
    parser.add_argument("--print-only", action="store_true", help="say what would run, install nothing")
    args = parser.parse_args(argv)
    try:
        index, notes = plan(
            os.environ.get("BARRIERLAB_TORCH", "auto"),
            has_nvidia_gpu(),
            platform.system(),
            os.environ.get("BARRIERLAB_TORCH_INDEX", CPU_INDEX),
        )
    except ValueError as error:
        print(f"install_torch: {error}", file=sys.stderr)
        return 2
    print("\n".join(notes), flush=True)
    command = pip_command(args.python, pinned_torch(), index)
    if args.print_only:
        print(" ".join(command))
        return 0
    done = subprocess.run(command)
    if done.returncode != 0:
        return done.returncode
    print(f"install_torch: installed {installed_build(args.python)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
