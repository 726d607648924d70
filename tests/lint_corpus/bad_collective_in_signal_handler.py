# A checkpoint save with a barrier made inside a SIGUSR1 handler: Python runs the handler in the process the
# signal reaches, so only that rank saves, at a moment of its own (old Lightning's SLURM connector installed
# `signal.signal(signal.SIGUSR1, self.sig_handler)` and saved there; a SLURM `--signal=B:USR1` reaches the batch
# step only). A module-level handler with an all_reduce too. Written here.
# expect: 23 signal-handler self.save
# expect: 28 signal-handler dist.all_reduce
import signal

import torch
import torch.distributed as dist


class Trainer:
    def save(self, path):
        if dist.get_rank() == 0:
            torch.save({}, path)
        dist.barrier()

    def install(self):
        signal.signal(signal.SIGUSR1, self.on_preempt)

    def on_preempt(self, signum, frame):
        self.save("preempted.pt")


def report_on_term(signum, frame):
    total = torch.ones(1)
    dist.all_reduce(total)


signal.signal(signal.SIGTERM, report_on_term)
