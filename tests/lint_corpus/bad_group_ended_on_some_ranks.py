# The process group ended on some ranks before a collective the others still make: after
# `destroy_process_group()` (or accelerate's `end_training()`, which calls it since accelerate PR #3012) that rank's
# collectives raise, and the others wait in theirs for it.
# Models the tracking epilogue of transformers' `examples/pytorch/*_no_trainer.py` scripts
# (`if args.with_tracking: accelerator.end_training()` before `wait_for_everyone()`, transformers issue #37434)
# and a rank-0 cleanup before a final barrier; written here.
# expect: 23 early-exit accelerator.wait_for_everyone
# expect: 30 early-exit dist.barrier
import torch.distributed as dist
from accelerate import Accelerator

accelerator = Accelerator()


def train():
    pass


def finish_tracking():
    train()
    if accelerator.is_main_process:
        accelerator.end_training()
    accelerator.wait_for_everyone()


def finish_plain():
    train()
    if dist.get_rank() == 0:
        dist.destroy_process_group()
    dist.barrier()
