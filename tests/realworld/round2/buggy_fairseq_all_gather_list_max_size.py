"""fairseq's trainer aggregates logging outputs with ``all_gather_list``; one rank's outputs outgrow
``max_size`` and that rank raises before the all_reduce the others are already in.

Source: facebookresearch/fairseq fairseq/trainer.py (``_aggregate_logging_outputs`` →
``_all_gather_list_sync`` → ``distributed_utils.all_gather_list(..., max_size=getattr(self.cfg.common,
"all_gather_list_size", 16384))``) and fairseq/distributed/utils.py (``all_gather_list`` raises
``ValueError("encoded data size ... exceeds max_size ...")`` on the rank whose pickle is too large, before the
collective); fairseq issues report exactly this error in long runs. The collective is in another module.
Bug: the logging output carries a rank-dependent list (the ids of the samples seen), large only on rank 1
(BUG); rank 1 raises; rank 0 waits in the all_reduce inside ``all_gather_list`` (WAITS on the item's call).
"""

from datetime import timedelta

import torch
import torch.distributed as dist

import r2_fairseq_utils as distributed_utils

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 2.0
ALL_GATHER_LIST_SIZE = 2048


def train_step(model, rank, step):
    batch = torch.randn(8, 4)
    loss = model(batch).pow(2).mean()
    loss.backward()
    sample_ids = list(range(step * 1000, step * 1000 + (1500 if rank == 1 else 6)))  # BUG
    return {"loss": loss.item(), "nsentences": len(batch), "ids": sample_ids}


def aggregate_logging_outputs(logging_output):
    gathered = distributed_utils.all_gather_list(logging_output, max_size=ALL_GATHER_LIST_SIZE)  # WAITS
    return sum(o["loss"] for o in gathered) / len(gathered)


def worker():
    model = torch.nn.Linear(4, 1)
    losses = []
    for step in range(2):
        output = train_step(model, dist.get_rank(), step)
        losses.append(aggregate_logging_outputs(output))  # WAITS
    return losses


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
