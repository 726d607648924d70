"""VLMEvalKit `run.py` under torchrun: each rank names the output folder from its own clock (`build_eval_id()`),
so ranks that start a second apart write their prediction shards into different folders, and rank 0's merge does
not find them (buggy).

Source: open-compass/VLMEvalKit issue #1540 and PR #1546 ("Sync eval id across distributed ranks");
`run.py` (`eval_id = build_eval_id()` before `dist.init_process_group`), `vlmeval/inference.py` `infer_data_job`.
`build_eval_id()` returns `'T' + datetime.now().strftime('%Y%m%d-%H%M%S')`, the output sub-folder of the run. The
issue: torchrun's processes start a little apart; rank 0 computed `T...-174208`, ranks 1-6 two seconds later
`T...-174210`, so they wrote `{rank}{world_size}_{dataset}.pkl` into another folder, and rank 0, merging all
shards in its own folder, could not find the files of ranks 1-6 (the issue is in Chinese; paraphrased): `[Errno 2]
No such file or directory: 'outputs/.../18_MME.pkl'`. Here rank 0 raises FileNotFoundError in the merge; rank 1 waits in the barrier after it.

Stand-ins: rank 1 starts 1.05 s after rank 0 (the start-up skew the issue measured: 2 s); in `run.py` that skew is
before `init_process_group`, here the harness has made the group already, so the skew is a sleep at the top of the
rank's setup. The model is a tiny linear scorer over 6 multiple-choice samples built in code; `dump`/`load` are
pickle files.
"""

import datetime
import os
import pickle
import shutil
import tempfile
import time
from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15


def build_eval_id():
    return "T" + datetime.datetime.now().strftime("%Y%m%d-%H%M%S")


def dump(obj, path):
    with open(path, "wb") as f:
        pickle.dump(obj, f)


def load(path):
    with open(path, "rb") as f:
        return pickle.load(f)


def infer_data_job(model, work_dir, dataset_name, samples):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    tmpl = os.path.join(work_dir, "{}" + f"{world_size}_{dataset_name}.pkl")
    mine = {idx: int(model(x).argmax()) for idx, x in samples[rank::world_size]}
    dump(mine, tmpl.format(rank))
    dist.barrier()
    if rank == 0:
        data_all = {}
        for i in range(world_size):
            data_all.update(load(tmpl.format(i)))
        dump(data_all, os.path.join(work_dir, f"model_{dataset_name}.pkl"))
        for i in range(world_size):
            os.remove(tmpl.format(i))
    dist.barrier()  # WAITS
    return os.path.join(work_dir, f"model_{dataset_name}.pkl")


def worker():
    rank = dist.get_rank()
    if rank == 1:
        time.sleep(1.05)  # stand-in: rank 1's process started later than rank 0's
    eval_id = build_eval_id()  # BUG
    root = os.path.join(tempfile.gettempdir(), f"r38_vlmeval_bug_{os.environ.get('MASTER_PORT', '0')}_{os.getppid()}")
    work_dir = os.path.join(root, "tiny_vlm", eval_id)
    os.makedirs(work_dir, exist_ok=True)
    torch.manual_seed(0)
    model = torch.nn.Linear(6, 4)
    g = torch.Generator().manual_seed(3)
    samples = [(idx, torch.randn(6, generator=g)) for idx in range(6)]
    with torch.no_grad():
        result_file = infer_data_job(model, work_dir, "MME", samples)  # WAITS
    if rank == 0:
        predictions = load(result_file)
        print(f"[rank 0] {len(predictions)} predictions in {result_file}")
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
