"""Old Hugging Face example scripts before PR #1081: evaluation only on the first process reaches the
feature-cache barrier that the other processes never reach.

Source: huggingface/transformers PR #1081 ("Fix distributed barrier hang", issue #998): run_glue.py ran
``if args.do_eval and args.local_rank in [-1, 0]:`` → ``evaluate`` → ``load_and_cache_examples(...,
evaluate=True)``, whose ``if args.local_rank == 0: torch.distributed.barrier()`` then waited for processes
that had already left. The fix added ``and not evaluate`` to both barrier conditions.
Bug: evaluation only on local rank 0 (BUG line); rank 0 waits in the cache barrier (WAITS line) for
ranks that have finished.
"""

import os
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 2.0


class Args:
    def __init__(self, local_rank, data_dir):
        self.local_rank = local_rank
        self.data_dir = data_dir
        self.do_eval = True


def load_and_cache_examples(args, evaluate=False):
    if args.local_rank not in [-1, 0]:
        dist.barrier()
    name = "cached_dev" if evaluate else "cached_train"
    cached_features_file = os.path.join(args.data_dir, name)
    if os.path.exists(cached_features_file):
        features = torch.load(cached_features_file)
    else:
        features = torch.randn(8, 4)
        if args.local_rank in [-1, 0]:
            torch.save(features, cached_features_file)
    if args.local_rank == 0:
        dist.barrier()  # WAITS
    return features


def evaluate(args, model):
    features = load_and_cache_examples(args, evaluate=True)  # WAITS
    with torch.no_grad():
        return model.module(features).pow(2).mean().item()


def worker():
    box = [tempfile.mkdtemp() if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(box, src=0)
    args = Args(int(os.environ.get("LOCAL_RANK", -1)), box[0])
    model = DDP(torch.nn.Linear(4, 1))
    features = load_and_cache_examples(args, evaluate=False)
    loss = model(features).pow(2).mean()
    loss.backward()
    result = None
    if args.do_eval and args.local_rank in [-1, 0]:  # BUG
        result = evaluate(args, model)  # WAITS
    return result


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
