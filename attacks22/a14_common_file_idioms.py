"""attack22 a14: the file traffic of ordinary training code, unordered and ordered.

Promise (docs/reference.md, "File races"): the model reports an unordered write/read of one file on two ranks and
no ordered one. Unordered (rank 1 reads 0.3-0.5 s after rank 0 wrote, nothing between): torch.save into an open
file / torch.load from one, pathlib write_text / read_text, json tmp + os.replace / open, shutil.copy / open,
np.save / np.load, a folder written then os.rename'd (tmp-checkpoint-N -> checkpoint-N) / torch.load inside it,
shutil.rmtree / a read of a file inside, and DataLoader worker processes reading shards rank 0 writes. Ordered
twins (a barrier between) of the file-object, folder-rename and DataLoader cases. Exit 0 if every unordered
case is reported and no ordered one is.
"""

import json
import os
import pathlib
import shutil
import time

import torch.distributed as dist
from _h import races_of, verdict


class Shards:
    def __init__(self, d):
        self.d = d

    def __len__(self):
        return 4

    def __getitem__(self, i):
        with open(os.path.join(self.d, f"shard{i}.txt")) as f:
            return int(f.read())


def fileobj(ordered):
    def job(d):
        import torch

        p = os.path.join(d, "x.pt")
        if dist.get_rank() == 0:
            with open(p, "wb") as f:
                torch.save({"a": 1}, f)
        if ordered:
            dist.barrier()
        if dist.get_rank() == 1:
            time.sleep(0 if ordered else 0.3)
            with open(p, "rb") as f:
                torch.load(f)
        dist.barrier()

    return job


def pathlib_text(d):
    p = pathlib.Path(d) / "v.txt"
    if dist.get_rank() == 0:
        p.write_text("hi")
    else:
        time.sleep(0.3)
        p.read_text()
    dist.barrier()


def json_replace(d):
    p = os.path.join(d, "v.json")
    if dist.get_rank() == 0:
        with open(p + ".tmp", "w") as f:
            json.dump({}, f)
        os.replace(p + ".tmp", p)
    else:
        time.sleep(0.3)
        with open(p) as f:
            f.read()
    dist.barrier()


def copy(d):
    src, dst = os.path.join(d, "src.txt"), os.path.join(d, "dst.txt")
    if dist.get_rank() == 0:
        with open(src, "w") as f:
            f.write("x")
        shutil.copy(src, dst)
    else:
        time.sleep(0.3)
        with open(dst) as f:
            f.read()
    dist.barrier()


def numpy_npy(d):
    import numpy as np

    p = os.path.join(d, "a.npy")
    if dist.get_rank() == 0:
        np.save(p, np.zeros(3))
    else:
        time.sleep(0.3)
        np.load(p)
    dist.barrier()


def dir_rename(ordered):
    def job(d):
        import torch

        tmp, final = os.path.join(d, "tmp-checkpoint-10"), os.path.join(d, "checkpoint-10")
        if dist.get_rank() == 0:
            os.makedirs(tmp)
            torch.save({"w": 1}, os.path.join(tmp, "model.pt"))
            os.rename(tmp, final)
        if ordered:
            dist.barrier()
        if dist.get_rank() == 1:
            time.sleep(0 if ordered else 0.5)
            torch.load(os.path.join(final, "model.pt"))
        dist.barrier()

    return job


def rmtree(d):
    sub = os.path.join(d, "cache")
    if dist.get_rank() == 0:
        os.makedirs(sub)
        with open(os.path.join(sub, "a.txt"), "w") as f:
            f.write("x")
    dist.barrier()
    if dist.get_rank() == 0:
        time.sleep(0.3)
        shutil.rmtree(sub)
    else:
        with open(os.path.join(sub, "a.txt")) as f:
            f.read()
    dist.barrier()


def loader(ordered):
    def job(d):
        from torch.utils.data import DataLoader

        if dist.get_rank() == 0:
            for i in range(4):
                with open(os.path.join(d, f"shard{i}.txt"), "w") as f:
                    f.write(str(i))
        if ordered:
            dist.barrier()
        if dist.get_rank() == 1 or ordered:
            time.sleep(0 if ordered else 0.5)
            assert sum(int(x.sum()) for x in DataLoader(Shards(d), batch_size=2, num_workers=2)) == 6
        dist.barrier()

    return job


def main():
    cases = [
        ("torch.save/load through file objects", fileobj(False), True),
        ("pathlib write_text/read_text", pathlib_text, True),
        ("json tmp + os.replace", json_replace, True),
        ("shutil.copy", copy, True),
        ("np.save/np.load", numpy_npy, True),
        ("folder renamed tmp-checkpoint -> checkpoint", dir_rename(False), True),
        ("shutil.rmtree vs read inside", rmtree, True),
        ("DataLoader workers read shards", loader(False), True),
        ("ordered: file objects", fileobj(True), False),
        ("ordered: folder rename", dir_rename(True), False),
        ("ordered: DataLoader workers", loader(True), False),
    ]
    wrong = []
    for name, fn, racy in cases:
        run, races = races_of(fn, timeout=20)
        assert run.ok, (name, run)
        ok = bool(races) == racy
        print(f"{'ok ' if ok else 'BAD'} {name}: {len(races)} race(s)")
        if not ok:
            wrong.append(name)
            for r in races:
                print("    ", r[:200])
    verdict(bool(wrong), f"{len(wrong)} idiom(s) misjudged: {wrong}")


if __name__ == "__main__":
    main()
