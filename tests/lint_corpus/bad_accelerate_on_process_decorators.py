# Functions that Accelerate runs on one process only (@accelerator.on_last_process,
# @accelerator.on_process(process_index=...)) or code under accelerator.is_last_process, that make a
# collective: the other processes never join it.
# Models the "Execute on a specific process" section of Accelerate's "Execution process" tutorial
# (huggingface/accelerate docs/source/basic_tutorials/execution.md), written here.
# expect: 17 branch accelerator.wait_for_everyone
# expect: 23 branch accelerator.save_state
# expect: 28 branch accelerator.gather
from accelerate import Accelerator

accelerator = Accelerator()


@accelerator.on_last_process
def report(losses):
    print(sum(losses))
    accelerator.wait_for_everyone()


@accelerator.on_process(process_index=0)
def checkpoint(step):
    print(f"saving {step}")
    accelerator.save_state(f"step_{step}")


def log_predictions(logits):
    if accelerator.is_last_process:
        print(accelerator.gather(logits).shape)
