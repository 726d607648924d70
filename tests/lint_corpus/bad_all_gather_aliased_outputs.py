# all_gather into `[torch.zeros_like(t)] * world_size`: one tensor in every slot, so each slot shows the
# block written last and the gathered predictions are one rank's, repeated (pytorch/pytorch issue #14632,
# Lightning issue #3253's gather_all_tensors). Also a gather to rank 0 into an aliased list. Written here.
# expect: 13 aliased-outputs dist.all_gather
# expect: 22 aliased-outputs dist.gather
import torch
import torch.distributed as dist


def gather_predictions(preds):
    world_size = dist.get_world_size()
    gathered = [torch.zeros_like(preds)] * world_size
    dist.all_gather(gathered, preds)
    return torch.cat(gathered)


def gather_to_rank0(x):
    if dist.get_rank() == 0:
        out = [torch.empty_like(x)] * dist.get_world_size()
    else:
        out = None
    dist.gather(x, out, dst=0)
    return out
