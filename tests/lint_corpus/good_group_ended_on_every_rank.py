# The process group ended on every rank, after the last collective; a subgroup destroyed by its members only.
# Models the same `*_no_trainer.py` epilogue as fixed upstream (`accelerator.end_training()` on every process, after
# `wait_for_everyone()`) and the DDP tutorial's `cleanup()`; written here.
# expect: none
import torch.distributed as dist
from accelerate import Accelerator

accelerator = Accelerator()


def finish_tracking():
    accelerator.wait_for_everyone()
    accelerator.end_training()


def cleanup():
    dist.destroy_process_group()


def finish_plain(pair):
    dist.barrier()
    if dist.get_rank() < 2:
        dist.destroy_process_group(pair)
    dist.barrier()
    cleanup()
