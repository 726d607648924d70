# Checkpoints keyed to the progress bar's own count: a tqdm disabled off the local main process does not
# count (its update returns early), so only the main process reaches save_state, whose barrier the others
# never join.
# Models the progress bar of Accelerate's "Execution process" tutorial (huggingface/accelerate
# docs/source/basic_tutorials/execution.md) and the checkpointing_steps block of transformers'
# examples/pytorch/text-classification/run_glue_no_trainer.py, with the step counter replaced by the bar's,
# written here.
# expect: 22 branch accelerator.save_state
from accelerate import Accelerator
from tqdm.auto import tqdm


def train(model, optimizer, loader, max_steps, checkpointing_steps):
    accelerator = Accelerator()
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    progress_bar = tqdm(range(max_steps), disable=not accelerator.is_local_main_process)
    for batch in loader:
        accelerator.backward(model(**batch).loss)
        optimizer.step()
        progress_bar.update(1)
        if progress_bar.n % checkpointing_steps == 0:
            accelerator.save_state(f"step_{progress_bar.n}")
