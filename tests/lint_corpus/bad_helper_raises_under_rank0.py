# Rank 0 prepares the data through a helper that raises when the download is incomplete; the other
# ranks already wait in the barrier, and wait there until the timeout (or until rank 0's process ends).
# Models the "main process first" data preparation of huggingface/transformers
# examples/pytorch/language-modeling/run_clm.py (datasets prepared on the main process while the others
# wait), written here.
# expect: 21 early-exit dist.barrier
import os

import torch.distributed as dist


def prepare(path):
    if not os.path.exists(os.path.join(path, "done")):
        raise FileNotFoundError(f"{path} is incomplete")
    return os.listdir(path)


def main(path):
    if dist.get_rank() == 0:
        prepare(path)
    dist.barrier()
