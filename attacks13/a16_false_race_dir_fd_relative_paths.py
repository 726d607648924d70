"""Promise 4: no false race on correct code (paths relative to a directory descriptor).

Each rank opens its own folder (scratch-rank0, scratch-rank1) as a directory descriptor and writes "out.txt"
relative to it with os.open(..., dir_fd=fd): two different files. run.races() reports "rank 1 opened `out.txt`
for writing ... after rank 0 opened it for writing ... nothing orders them": the recorder keeps the relative name
and drops dir_fd, so both ranks' files look like one path. (The same code with os.chdir into each rank's folder
reports none: relative paths are resolved against the cwd, not against dir_fd.)
"""

import os
import shutil
import sys
import tempfile

import torch.distributed as dist

import barrierlab as bl


def own_folder_by_fd(folder):
    rank = dist.get_rank()
    mine = os.path.join(folder, f"scratch-rank{rank}")
    os.makedirs(mine)
    dfd = os.open(mine, os.O_RDONLY)
    try:
        fd = os.open("out.txt", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=dfd)
        os.write(fd, str(rank).encode())
        os.close(fd)
        dist.barrier()
        fd = os.open("out.txt", os.O_RDONLY, dir_fd=dfd)
        value = os.read(fd, 10).decode()
        os.close(fd)
    finally:
        os.close(dfd)
    return value


if __name__ == "__main__":
    d = tempfile.mkdtemp(prefix="a13-")
    try:
        run = bl.run(own_folder_by_fd, world_size=2, args=(d,), live=False)
        races = run.races()
        print(run.values, f"{len(races)} race(s)")
        for race in races[:2]:
            print("  ", str(race)[:300])
    finally:
        shutil.rmtree(d, ignore_errors=True)
    if run.values == ["0", "1"] and races:
        print("BROKEN: two ranks' different files (same name under their own dir_fd) reported as a race")
        sys.exit(1)
    print("held")
