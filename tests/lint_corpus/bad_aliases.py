# The same collectives spelled in different ways, each under a rank condition.
# expect: 15 branch torch.distributed.barrier
# expect: 17 branch ar
# expect: 19 branch distributed.broadcast
# expect: 20 branch barrier
import os

import torch
import torch.distributed
from torch import distributed
from torch.distributed import all_reduce as ar, barrier

t = torch.ones(1)
if torch.distributed.get_rank() == 0:
    torch.distributed.barrier()
if int(os.environ.get("RANK", "0")) > 0:
    ar(t)
global_rank = distributed.get_rank()
ok = distributed.broadcast(t, src=0) if global_rank == 0 else None
global_rank == 0 and barrier()
