# Reduced from huggingface/accelerate examples/complete_nlp_example.py training_function: the epoch loop with
# checkpointing_steps, accelerator.save_state on every process, the eval loop with gather_for_metrics and the
# main-process-only print. Kept: that structure; dropped: tokenizer, dataloaders' construction, tracking.
import os
import torch
from accelerate import Accelerator


def training_function(config, args, model, optimizer, train_dataloader, eval_dataloader, lr_scheduler, metric):
    accelerator = Accelerator(cpu=args.cpu, mixed_precision=args.mixed_precision)
    model, optimizer, train_dataloader, eval_dataloader, lr_scheduler = accelerator.prepare(
        model, optimizer, train_dataloader, eval_dataloader, lr_scheduler
    )
    overall_step = 0
    for epoch in range(config["num_epochs"]):
        model.train()
        for step, batch in enumerate(train_dataloader):
            outputs = model(**batch)
            accelerator.backward(outputs.loss)
            optimizer.step()
            lr_scheduler.step()
            optimizer.zero_grad()
            overall_step += 1
            if isinstance(args.checkpointing_steps, int) and overall_step % args.checkpointing_steps == 0:
                output_dir = os.path.join(args.output_dir, f"step_{overall_step}")
                accelerator.save_state(output_dir)
        model.eval()
        for step, batch in enumerate(eval_dataloader):
            with torch.no_grad():
                outputs = model(**batch)
            predictions = outputs.logits.argmax(dim=-1)
            predictions, references = accelerator.gather_for_metrics((predictions, batch["labels"]))
            metric.add_batch(predictions=predictions, references=references)
        eval_metric = metric.compute()
        accelerator.print(f"epoch {epoch}:", eval_metric)
        if args.checkpointing_steps == "epoch":
            accelerator.save_state(os.path.join(args.output_dir, f"epoch_{epoch}"))
    accelerator.end_training()
