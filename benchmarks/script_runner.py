"""The script runner from a shell: ``barrierlab run tiny.py -n 4`` timed whole (what a learner waits for at a
prompt), against ``python -c "import torch"`` on the same machine at the same time.

    python benchmarks/script_runner.py [--repeat 7] [--other-src PATH]

``tiny.py`` initialises the group, makes one ``dist.barrier()`` and destroys the group. Each repeat runs, one
after the other, the command with this tree's ``src``, the command with ``--other-src`` (another checkout's
``src``, e.g. a worktree of an earlier commit: interleaved pairs, so that a machine shared with other work
weighs on both alike) and the plain ``import torch``. Prints each time and the medians. Issue 21's target:
the whole command <= 2.0 s on a quiet machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TINY = """import torch.distributed as dist
dist.init_process_group("gloo")
dist.barrier()
dist.destroy_process_group()
"""
HERE = Path(__file__).resolve().parent.parent / "src"


def timed(command: list[str], src: Path | None, folder: str) -> float:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=120)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--other-src", type=Path, default=None, help="another checkout's src, run interleaved")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bl-script-runner-") as folder:
        Path(folder, "tiny.py").write_text(TINY)
        cli = [sys.executable, "-m", "barrierlab", "run", "tiny.py", "-n", "4"]
        rows: dict[str, list[float]] = {"this tree": [], "other": [], "import torch": []}
        for i in range(args.repeat):
            rows["this tree"].append(timed(cli, HERE, folder))
            if args.other_src is not None:
                rows["other"].append(timed(cli, args.other_src, folder))
            rows["import torch"].append(timed([sys.executable, "-c", "import torch"], None, folder))
            print(f"repeat {i + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in rows.items() if v), flush=True)
        print(f"load average at the end: {os.getloadavg()[0]:.1f}")
        for name, values in rows.items():
            if values:
                print(f"{name:>12}: median {statistics.median(values):.2f} s ({min(values):.2f}-{max(values):.2f} s)")


if __name__ == "__main__":
    main()
