# The same per-rank shard loader, with the failure decided together: each rank notes whether its own load failed,
# one all_reduce(MAX) of the flag tells every rank, and every rank exits (or goes on) together before the
# barrier. A handler that only records the failure, and a sys.exit() that every rank reaches alike, are fine.
# Written here (the fix corpus34's Megatron twin makes).
# expect: none
import sys

import torch
import torch.distributed as dist


def load_checkpoint(model, load_dir, iteration):
    name = f"{load_dir}/iter_{iteration:07d}/mp_rank_{dist.get_rank():02d}/model_optim_rng.pt"
    failed = torch.zeros(1)
    try:
        state_dict = torch.load(name)
    except FileNotFoundError:
        failed += 1
    dist.all_reduce(failed, op=dist.ReduceOp.MAX)
    if failed.item():
        sys.exit(1)
    model.load_state_dict(state_dict["model"])
    dist.barrier()
    return iteration
