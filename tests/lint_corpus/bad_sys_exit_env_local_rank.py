# Script-level code: only local rank 0 of each node continues past sys.exit().
# expect: 16 early-exit dist.barrier
# expect: 17 early-exit torch.distributed.all_reduce
import os
import sys

import torch
import torch.distributed as dist

dist.init_process_group("nccl")
LOCAL_RANK = int(os.environ["LOCAL_RANK"])

if LOCAL_RANK != 0:
    sys.exit(0)

dist.barrier()
torch.distributed.all_reduce(torch.ones(1, device="cuda"))
