"""VLMEvalKit `run.py` under torchrun: rank 0's `eval_id` (the output folder's name, from its clock) is broadcast
after the process group exists, so every rank writes its prediction shard into the same folder (correct).

Source: open-compass/VLMEvalKit issue #1540 and PR #1546 ("Sync eval id across distributed ranks");
`run.py` (`eval_id = build_eval_id()`), `vlmeval/inference.py` `infer_data_job`.
The PR's fix: "Broadcast the rank 0 eval_id after initializing the process group so torchrun workers write
prediction shards to the same output directory" (`dist.broadcast_object_list` from rank 0). Each rank still calls
`build_eval_id()`, on its own clock; only rank 0's value survives. Rank 0 merges the shards after the barrier and
writes the result file; everyone meets in the second barrier.

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

KIND = "correct"
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
    dist.barrier()
    return os.path.join(work_dir, f"model_{dataset_name}.pkl")


def worker():
    rank = dist.get_rank()
    if rank == 1:
        time.sleep(1.05)  # stand-in: rank 1's process started later than rank 0's
    eval_id = build_eval_id()
    holder = [eval_id]
    dist.broadcast_object_list(holder, src=0)
    eval_id = holder[0]
    root = os.path.join(tempfile.gettempdir(), f"r38_vlmeval_ok_{os.environ.get('MASTER_PORT', '0')}_{os.getppid()}")
    work_dir = os.path.join(root, "tiny_vlm", eval_id)
    os.makedirs(work_dir, exist_ok=True)
    torch.manual_seed(0)
    model = torch.nn.Linear(6, 4)
    g = torch.Generator().manual_seed(3)
    samples = [(idx, torch.randn(6, generator=g)) for idx in range(6)]
    with torch.no_grad():
        result_file = infer_data_job(model, work_dir, "MME", samples)
    if rank == 0:
        predictions = load(result_file)
        print(f"[rank 0] {len(predictions)} predictions in {result_file}")
    dist.barrier()  # rank 0 has read the result file before it removes the folder
    if rank == 0:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
