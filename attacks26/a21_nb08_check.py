"""Notebook 08's check (the capstone script): wrong fixes (right APIs in the wrong place / on the wrong ranks) must
get ✗ with a reason; right fixes written differently from notebooks/capstone/solution.py must get ✓. Each variant is
solution.py or train.py with a text substitution, written to a temporary folder."""

import os
import shutil
import sys
import tempfile

import _h

from barrierlab.exercises import nb08

CAP = _h.TREE / "notebooks" / "capstone"
SOL = (CAP / "solution.py").read_text()
TRAIN = (CAP / "train.py").read_text()
FIX1 = "    dist.barrier()  # fix 1: every rank, after rank 0's last save and before any rank reloads it\n"
FIX2 = "    dist.barrier()  # fix 2: every rank has reloaded the checkpoint before rank 0 removes it\n"
RELOAD = "    state = torch.load(checkpoint, weights_only=True)\n"
REMOVE = "        os.remove(checkpoint)\n"
SAVE = "            save_checkpoint(model.module, optimizer, epoch, checkpoint)\n"
assert FIX1 in SOL and FIX2 in SOL and RELOAD in SOL and REMOVE in SOL and SAVE in SOL and SAVE in TRAIN


def variants():
    v = {}
    # (a) wrong
    v["w_fix2_before_reload"] = (SOL.replace(FIX2, "").replace(RELOAD, FIX2 + RELOAD), False)
    v["w_fix2_async_unwaited"] = (SOL.replace(FIX2, "    dist.barrier(async_op=True)\n"), False)
    v["w_fix1_others_once_keep_hidden"] = (
        TRAIN.replace(
            "    # 4. Every rank", "    if rank != 0:\n        dist.barrier()\n\n    # 4. Every rank"
        ).replace("    # 5. Rank 0", FIX2 + "\n    # 5. Rank 0"),
        False,
    )
    v["w_fix2_only_on_rank0"] = (SOL.replace(FIX2, "    if rank == 0:\n        dist.barrier()\n"), False)
    # (b) right, written differently
    v["r_mirror_barrier_each_epoch"] = (
        TRAIN.replace(
            SAVE, SAVE + "        else:\n            dist.barrier()  # pairs with save_checkpoint's\n"
        ).replace("    # 5. Rank 0", FIX2 + "\n    # 5. Rank 0"),
        True,
    )
    v["r_fix2_store_keys"] = (
        SOL.replace(
            FIX2,
            (
                "    from torch.distributed.distributed_c10d import _get_default_store\n"
                "    store = _get_default_store()\n"
                "    store.set(f'reloaded/{rank}', '1')\n"
                "    if rank == 0:\n"
                "        store.wait([f'reloaded/{r}' for r in range(dist.get_world_size())])\n"
            ),
        ),
        True,
    )
    v["r_fix2_all_reduce_ok_flags"] = (
        SOL.replace(
            FIX2,
            (
                "    ok = torch.ones(1)\n"
                "    dist.all_reduce(ok)  # every rank's reload succeeded\n"
                "    assert ok.item() == dist.get_world_size()\n"
            ),
        ),
        True,
    )
    v["r_fix1_helper_fix2_gather"] = (
        SOL.replace(FIX1, "    wait_for_rank0_checkpoint()\n")
        .replace("def evaluate(", "def wait_for_rank0_checkpoint():\n    dist.barrier()\n\n\ndef evaluate(")
        .replace(
            FIX2,
            (
                "    dist.gather(torch.ones(1), [torch.zeros(1) for _ in range(dist.get_world_size())] if rank == 0 else None, dst=0)\n"
            ),
        ),
        True,
    )
    return v


def main():
    tmp = tempfile.mkdtemp(prefix="a26-nb08-")
    try:
        cases = []
        for name, (text, expect) in variants().items():
            path = os.path.join(tmp, f"{name}.py")
            with open(path, "w") as f:
                f.write(text)
            cases.append((name, path, expect))
        return _h.check_cases(nb08.check, cases)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
