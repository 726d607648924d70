"""glob of a folder another rank writes shards into (directly, no rename).
good: rank 1 writes the shards, barrier, rank 0 globs and reads -> no race.
bad: rank 0 polls glob('shard_*') until 4 are listed, then reads them; rank 1 writes each shard in two parts with a
sleep between -> the last shard is read partly written: race."""

import sys

import _h


def _write_shards(d):
    import os
    import time

    for i in range(4):
        with open(os.path.join(d, f"shard_{i}"), "w") as f:
            f.write("a" * 1000)
            f.flush()
            time.sleep(0.15)
            f.write("b" * 1000)


def _read(d):
    import glob

    return [len(open(p).read()) for p in sorted(glob.glob(d + "/shard_*"))]


def good(d):
    import torch.distributed as dist

    if dist.get_rank() == 1:
        _write_shards(d)
    dist.barrier()
    return _read(d) if dist.get_rank() == 0 else None


def bad(d):
    import glob
    import time

    import torch.distributed as dist

    v = None
    if dist.get_rank() == 1:
        _write_shards(d)
    elif dist.get_rank() == 0:
        while len(glob.glob(d + "/shard_*")) < 4:
            time.sleep(0.002)
        v = _read(d)
    dist.barrier()
    return v


sys.exit(
    _h.judge([("write-barrier-glob", good, False, {"world": 2}), ("glob-poll-partial-shards", bad, True, {"world": 2})])
)
