# Accelerate's one-process decorators around printing and writing only; the gather and the barrier are made
# by every process, outside them.
# Models the "Execute on a specific process" section of Accelerate's "Execution process" tutorial
# (huggingface/accelerate docs/source/basic_tutorials/execution.md), written here.
# expect: none
from accelerate import Accelerator

accelerator = Accelerator()


@accelerator.on_last_process
def report(losses):
    print(sum(losses))


@accelerator.on_process(process_index=0)
def write(text):
    with open("log.txt", "a") as f:
        f.write(text)


def log_predictions(logits):
    gathered = accelerator.gather(logits)
    if accelerator.is_last_process:
        print(gathered.shape)
    accelerator.wait_for_everyone()
