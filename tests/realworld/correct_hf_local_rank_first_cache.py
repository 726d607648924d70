"""Old Hugging Face example scripts: the first process builds the feature cache while the others wait
at a barrier, then it releases them with a barrier of its own.

Source: huggingface/transformers examples/run_glue.py (v2.x), ``load_and_cache_examples``:
``if args.local_rank not in [-1, 0] and not evaluate: torch.distributed.barrier()`` before building the
features and ``if args.local_rank == 0 and not evaluate: torch.distributed.barrier()`` after (the
``and not evaluate`` guard is the fix of PR #1081); ``main`` then trains on every process.
Changed for the lab: features are a small tensor file; training is one DDP step.
Expected: every rank finishes (each barrier is reached once by every rank).
"""

import os
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 2.0


class Args:
    def __init__(self, local_rank, data_dir):
        self.local_rank = local_rank
        self.data_dir = data_dir


def load_and_cache_examples(args, evaluate=False):
    if args.local_rank not in [-1, 0] and not evaluate:
        dist.barrier()  # only the first process processes the dataset; the others use the cache
    cached_features_file = os.path.join(args.data_dir, "cached_train")
    if os.path.exists(cached_features_file):
        features = torch.load(cached_features_file)
    else:
        features = torch.randn(16, 8)
        if args.local_rank in [-1, 0]:
            torch.save(features, cached_features_file)
    if args.local_rank == 0 and not evaluate:
        dist.barrier()  # the first process has built the cache: release the others
    return features


def train(args, features, model):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for batch in features.split(4):
        loss = model(batch).pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()


def worker():
    box = [tempfile.mkdtemp() if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(box, src=0)
    args = Args(int(os.environ.get("LOCAL_RANK", -1)), box[0])
    model = DDP(torch.nn.Linear(8, 1))
    features = load_and_cache_examples(args, evaluate=False)
    train(args, features, model)
    return features.shape[0]


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
