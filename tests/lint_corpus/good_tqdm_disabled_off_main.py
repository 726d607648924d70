# Progress bars shown on the local main process only: a disabled tqdm still yields every item, so the loops
# run as often on every rank; checkpoints are keyed to a step counter every rank keeps.
# Models the progress bar of Accelerate's "Execution process" tutorial (huggingface/accelerate
# docs/source/basic_tutorials/execution.md: tqdm(..., disable=not accelerator.is_local_main_process)) and the
# checkpointing_steps block of transformers' examples/pytorch/text-classification/run_glue_no_trainer.py,
# written here.
# expect: none
from accelerate import Accelerator
from tqdm.auto import tqdm


def train(model, optimizer, loader, eval_loader, max_steps, checkpointing_steps):
    accelerator = Accelerator()
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    progress_bar = tqdm(range(max_steps), disable=not accelerator.is_local_main_process)
    completed_steps = 0
    for batch in loader:
        accelerator.backward(model(**batch).loss)
        optimizer.step()
        progress_bar.update(1)
        completed_steps += 1
        if completed_steps % checkpointing_steps == 0:
            accelerator.save_state(f"step_{completed_steps}")
    for batch in tqdm(eval_loader, desc="eval", disable=not accelerator.is_local_main_process):
        accelerator.gather_for_metrics(model(**batch).logits)
