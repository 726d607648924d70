# Lightning-style @rank_zero_only: the body runs on rank 0 only, so the
# broadcast_object_list inside it is never matched by the other ranks.
# expect: 16 branch dist.broadcast_object_list
import torch.distributed as dist
from lightning.pytorch.utilities import rank_zero_only


def load_vocab(path):
    with open(path) as f:
        return f.read().split()


@rank_zero_only
def share_vocab(path, holder):
    holder[0] = load_vocab(path)
    dist.broadcast_object_list(holder, src=0)
