# The twin of bad_collective_in_signal_handler.py: the handler only records the signal; at the end of each step
# every rank all-reduces the flag and, if any rank got the signal, every rank saves (Lightning's
# `_SignalConnector`, Megatron-LM's `DistributedSignalHandler`). Written here.
# expect: none
import signal

import torch
import torch.distributed as dist


class Trainer:
    def __init__(self):
        self.preempted = False
        signal.signal(signal.SIGUSR1, self.on_preempt)

    def on_preempt(self, signum, frame):
        self.preempted = True

    def end_of_step(self):
        flag = torch.tensor([1.0 if self.preempted else 0.0])
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        if flag.item() > 0:
            if dist.get_rank() == 0:
                torch.save({}, "preempted.pt")
            dist.barrier()
            return True
        return False
