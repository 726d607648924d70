# A checkpoint loader in the shape of Megatron-LM's load_checkpoint before NVIDIA/Megatron-LM PR #367: each rank
# loads its own shard (the path holds its rank); a rank whose load fails prints (through a rank-0-only print,
# so nothing shows) and calls sys.exit(), a success exit torchrun waits on, while the others wait in the barrier
# after the load. Written here (corpus34's Megatron item models the same report).
# expect: 20 early-exit dist.barrier
import sys

import torch
import torch.distributed as dist


def load_checkpoint(model, load_dir, iteration):
    name = f"{load_dir}/iter_{iteration:07d}/mp_rank_{dist.get_rank():02d}/model_optim_rng.pt"
    try:
        state_dict = torch.load(name)
    except BaseException as error:
        print(error)
        sys.exit()
    model.load_state_dict(state_dict["model"])
    dist.barrier()
    return iteration
