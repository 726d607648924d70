"""A per-node preview callback that runs one batch through the training model on each node's local rank 0 -- the
``DistributedDataParallel`` wrapper, whose forward broadcasts the BatchNorm buffers from rank 0 -- on a two-node
layout (2 nodes x 2 ranks, emulated on one host).

Models: Lightning's ``rank_zero_only`` decorator and callback hooks (``on_train_batch_end(trainer, pl_module,
...)``, where ``trainer.model`` is the strategy's wrapped model and ``pl_module`` the bare one); accelerate's
``is_local_main_process`` and ``unwrap_model``; ``DistributedDataParallel.forward`` (``_pre_forward`` calls
``_sync_buffers`` -- a broadcast of the module buffers from rank 0 -- when ``require_forward_param_sync`` is set,
which the previous training forward set, whatever ``torch.no_grad()`` or ``eval()`` say); openvinotoolkit/nncf PR
#592 (a batch-norm adaptation run on one process "freezes a distributed training in mmdetection") and pytorch PR
#59666 (DDP inference on one rank under ``no_grad``, safe only without buffers to broadcast).

What it does: 4 ranks laid out as 2 nodes of 2 (``node = rank // RANKS_PER_NODE``, ``local_rank = rank %
RANKS_PER_NODE``, the job's ``--nproc-per-node 2``) train a tiny MLP with a ``BatchNorm1d`` under DDP for 3 steps.
After each step the callbacks run; ``NodePreview`` is decorated to run on local rank 0 only (one preview per node,
written beside the node's own logs) and predicts a fixed batch in eval mode under ``torch.no_grad()``.

The bug: the preview calls ``trainer.model`` -- the DDP wrapper. Its forward broadcasts the BatchNorm buffers
from rank 0 on ranks 0 and 2 only (the nodes' local rank 0), so the preview's broadcast pairs with ranks 1 and 3's
next step's forward (its own buffer broadcast and the bucket rebuild of DDP's first steps), and from there the two
halves of the world are one collective apart. No collective is written in the callback; the value that picks the
ranks is the local rank.
"""

import functools
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 4
TIMEOUT = 20

RANKS_PER_NODE = 2  # the job's --nproc-per-node; 2 nodes
STEPS = 3


def local_rank_zero_only(fn):
    """Run the hook on each node's local rank 0 (as ``rank_zero_only``, per node); other ranks return None."""

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        if dist.get_rank() % RANKS_PER_NODE == 0:
            return fn(*args, **kwargs)  # WAITS
        return None

    return wrapped


class NodePreview:
    def __init__(self, batch):
        self.batch = batch

    @local_rank_zero_only
    def on_train_batch_end(self, trainer, pl_module, step):
        trainer.model.eval()
        with torch.no_grad():
            out = trainer.model(self.batch)  # BUG # WAITS
        trainer.model.train()
        node = dist.get_rank() // RANKS_PER_NODE
        print(f"[node {node}] step {step}: preview {out.argmax(dim=1).tolist()}", flush=True)


class Trainer:
    def __init__(self, module, callbacks):
        self.lightning_module = module
        self.model = DDP(module)  # the strategy's wrapped model
        self.callbacks = callbacks
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def fit(self, batches):
        for step, (x, y) in enumerate(batches):
            loss = F.cross_entropy(self.model(x), y)  # WAITS
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            for cb in self.callbacks:
                cb.on_train_batch_end(self, self.lightning_module, step)  # WAITS
        if dist.get_rank() == 0:
            print(f"last loss {loss.item():.4f}", flush=True)


def worker():
    torch.manual_seed(0)
    module = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))
    g = torch.Generator().manual_seed(100 + dist.get_rank())
    batches = [(torch.randn(8, 6, generator=g), torch.randint(0, 3, (8,), generator=g)) for _ in range(STEPS)]
    preview = torch.randn(4, 6, generator=torch.Generator().manual_seed(7))
    trainer = Trainer(module, [NodePreview(preview)])
    trainer.fit(batches)  # WAITS
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
