# A tensor meant to be shared from one rank, broadcast with the process's own rank as the source
# (`src=args.local_rank`, or a `LOCAL_RANK` read from the environment, confusing the broadcast's root with the
# device index of the `args.local_rank` launcher convention of torch.distributed.launch): every rank takes
# itself for the root, so each keeps its own tensor (or, on NCCL, the ranks wait for each other). torch's
# broadcast docs: `src` is the source rank, the same on every rank. Written here.
# expect: 20 self-root dist.broadcast
# expect: 21 self-root dist.broadcast_object_list
import os

import torch
import torch.distributed as dist


def share_seed(args):
    seed = torch.randint(0, 2**31, (1,))
    local_rank = int(os.environ["LOCAL_RANK"])
    config = [{"seed": int(seed)}]
    if args.verbose:
        print("sharing", config)
    dist.broadcast(seed, src=args.local_rank)
    dist.broadcast_object_list(config, src=local_rank)
    return seed, config
