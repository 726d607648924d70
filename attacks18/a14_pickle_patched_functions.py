"""Promise 3: a program that passes under torchrun passes under barrierlab run / bl.run.

A training script writes its checkpoint in a helper process (async checkpointing):
ProcessPoolExecutor(...).submit(torch.save, state, path). Under torchrun it passes. Under `barrierlab run`
every rank raises PicklingError: "Can't pickle <function save>: it's not the same object as
torch.serialization.save". The recorder replaces torch.save (and torch.load, open, os.path.exists, os.stat,
os.path.getsize, ...) with wrappers that carry the originals' __module__/__qualname__ (functools.wraps) while the
modules they name still hold the originals, so pickle -- which pickles a function by name and checks it finds
the same object -- refuses them. Also checked: pickle.dumps of those functions inside bl.run.
Exits 0 when the script passes under both and every function pickles in a rank, 1 otherwise.
"""

import os
import pickle
import shutil
import subprocess
import sys
import tempfile

SCRIPT = """
import multiprocessing, os, sys
from concurrent.futures import ProcessPoolExecutor
import torch, torch.distributed as dist

def main():
    dist.init_process_group("gloo")
    path = os.path.join(sys.argv[1], f"ckpt_rank{dist.get_rank()}.pt")
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("fork")) as pool:
        pool.submit(torch.save, {"w": torch.ones(3)}, path).result()
    dist.barrier()
    assert os.path.getsize(path) > 0
    dist.destroy_process_group()

if __name__ == "__main__":
    main()
"""


def probe():
    import os.path

    import torch

    out = {}
    for name, fn in [
        ("open", open),
        ("os.path.exists", os.path.exists),
        ("os.stat", os.stat),
        ("torch.save", torch.save),
        ("torch.load", torch.load),
    ]:
        try:
            pickle.loads(pickle.dumps(fn))
            out[name] = "ok"
        except Exception as error:  # noqa: BLE001
            out[name] = type(error).__name__
    return out


def main() -> int:
    python = sys.executable
    torchrun = os.path.join(os.path.dirname(python), "torchrun")
    work = tempfile.mkdtemp(prefix="a18_a14_")
    broken = False
    try:
        script = os.path.join(work, "train_async_save.py")
        with open(script, "w") as f:
            f.write(SCRIPT)
        results = {}
        for label, command in (
            ("torchrun", [torchrun, "--standalone", "--nproc-per-node", "2", script]),
            ("barrierlab run", [python, "-m", "barrierlab", "run", script, "-n", "2", "--"]),
        ):
            out = tempfile.mkdtemp(dir=work)
            done = subprocess.run([*command, out], capture_output=True, text=True, timeout=240)
            results[label] = done.returncode
            tail = [line for line in (done.stdout + done.stderr).splitlines() if "PicklingError" in line][:1]
            print(f"{label}: exit {done.returncode}", *tail)
        if results["torchrun"] == 0 and results["barrierlab run"] != 0:
            broken = True
        import barrierlab as bl

        run = bl.run(probe, world_size=1)
        print("pickle in a bl.run rank:", run.values[0])
        print("pickle in this process: ", probe())
        if any(v != "ok" for v in run.values[0].values()):
            broken = True
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if broken:
        print("BROKEN: functions barrierlab wraps cannot be pickled in a rank; torchrun's run of the script passes")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
