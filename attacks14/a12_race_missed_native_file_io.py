"""Promise 4: a real race is reported. The notebooks' first race (rank 0 saves, the others load, nothing orders
them; they come out right by timing) is reported by run.races() when the file is written with torch.save, and missed
when it is written by code that opens files outside Python's `open`: sqlite3 (standard library), a program rank 0
runs and waits for (`subprocess.run(["sh", "-c", "... > path"])`, as data is often fetched or unpacked with wget/tar)
and, if installed, safetensors' save_file/load_file (the format of Hugging Face's save_pretrained/from_pretrained). Exit 0 if
run.races() reports every unordered handoff, 1 if it misses one."""

import os
import shutil
import sys
import tempfile

import barrierlab as bl


def save_then_load(kind, folder):
    import time

    import torch
    import torch.distributed as dist

    path = os.path.join(folder, "model." + kind)
    if dist.get_rank() == 0:
        if kind == "pt":
            torch.save({"w": torch.ones(4)}, path)
        elif kind == "safetensors":
            from safetensors.torch import save_file

            save_file({"w": torch.ones(4)}, path)
        elif kind == "shell":
            import subprocess

            subprocess.run(["sh", "-c", f"printf 4 > '{path}'"], check=True)  # data prepared by a tool, waited for
        else:
            import sqlite3

            db = sqlite3.connect(path)
            db.execute("create table t(x)")
            db.execute("insert into t values (4)")
            db.commit()
            db.close()
    else:
        time.sleep(1.0)  # no barrier: right by timing only
    if kind == "pt":
        value = float(torch.load(path)["w"].sum())
    elif kind == "safetensors":
        from safetensors.torch import load_file

        value = float(load_file(path)["w"].sum())
    elif kind == "shell":
        with open(path) as f:
            value = float(f.read())
    else:
        import sqlite3

        db = sqlite3.connect(path)
        value = db.execute("select sum(x) from t").fetchone()[0]
        db.close()
    dist.barrier()
    return value


def main() -> int:
    kinds = ["pt", "sqlite", "shell"]
    try:
        import safetensors  # noqa: F401

        kinds.append("safetensors")
    except ImportError:
        print("safetensors is not installed here: its case is skipped")
    missed = []
    for kind in kinds:
        folder = tempfile.mkdtemp(prefix="a14-a12-")
        try:
            run = bl.run(save_then_load, 2, args=(kind, folder), live=False, timeout=5)
            races = run.races()
            print(f"{kind:12} statuses {run.statuses} values {run.values}: {len(races)} race(s) reported")
            if run.ok and not races:
                missed.append(kind)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    if missed:
        print(
            f"BROKEN: rank 1 loaded what rank 0 saved with nothing ordering them, and run.races() missed it for {missed}"
        )
        return 1
    print("held")
    return 0


if __name__ == "__main__":
    sys.exit(main())
