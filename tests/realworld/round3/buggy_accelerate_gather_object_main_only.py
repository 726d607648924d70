"""Real accelerate: ``gather_object`` called inside ``if is_main_process``.

Source: huggingface/accelerate issue #2733 ("gather_object does work with if distributed_state.is_main_process"):
``if distributed_state.is_main_process: print(gather_object(txt_out)[0])`` hung; the maintainer's answer: "You
also need to call gather_object across every worker". Each process generates its own outputs first.

The bug: a collective (``accelerate.utils.gather_object`` is an ``all_gather_object``) only on the main process;
the others go on to ``wait_for_everyone()``.
"""

import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 4
REQUIRES = ("accelerate",)


def worker():
    from accelerate import Accelerator
    from accelerate.utils import gather_object

    accelerator = Accelerator(cpu=True)
    txt_out = [f"answer from process {accelerator.process_index}"]
    if accelerator.is_main_process:  # BUG
        print(gather_object(txt_out))  # WAITS
    accelerator.wait_for_everyone()  # WAITS
    return txt_out


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
