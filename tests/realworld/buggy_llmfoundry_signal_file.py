"""llm-foundry before PR #749: local rank 0 prepares the dataset and writes a signal file; the other
ranks poll for that file. When preparation raises on rank 0, the file never appears and they poll forever
(no collective is involved, so torch's timeout never fires).

Source: mosaicml/llm-foundry PR #716 ("Run HF dataset processing on local rank 0 first": the
``.node_{node_rank}_local_rank0_data_prep_completed`` signal file) and PR #749 ("Catch exception raised in hf
prep properly": "the non local rank 0 processes depend on a signal file to be written but if a rank 0
process raises an exception then we never reach the dist.barrier()"); composer's
``local_rank_zero_download_and_wait`` polls for the file.
Bug: rank 0 raises before writing the signal file (BUG); the others wait in the polling loop (WAITS).
"""

import os
import tempfile
import time
from datetime import timedelta

import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 2.0


def local_rank_zero_download_and_wait(expected_file_path):
    while not os.path.exists(expected_file_path):
        time.sleep(0.1)  # WAITS


def build_from_hf(local_rank, signal_file_path):
    if local_rank != 0:
        local_rank_zero_download_and_wait(signal_file_path)  # WAITS
    rows = [{"prompt": "hi", "response": None}]
    dataset = [r["prompt"] + r["response"] for r in rows]  # BUG
    if local_rank == 0:
        with open(signal_file_path, "w") as f:
            f.write("local_rank0_completed_data_prep")
    dist.barrier()
    return dataset


def worker():
    box = [tempfile.mkdtemp() if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(box, src=0)
    signal_file_path = os.path.join(box[0], ".node_0_local_rank0_data_prep_completed")
    return len(build_from_hf(int(os.environ.get("LOCAL_RANK", 0)), signal_file_path))  # WAITS


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
