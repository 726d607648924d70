"""Real accelerate: every process evaluates its shard and ``gather_for_metrics`` drops the padded duplicates.

Source: huggingface/accelerate, src/accelerate/test_utils/scripts/external_deps/test_metrics.py (``test_mrpc`` /
``generate_predictions``): the prepared dataloader pads the last batch so every process gets the same number of
batches, ``accelerator.gather_for_metrics((preds, references))`` runs on every process, and only the main
process prints. 13 samples over 2 processes, batch 4: the gathered count must be exactly 13.
"""

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 5
REQUIRES = ("accelerate",)
NUM_SAMPLES = 13


def worker():
    from accelerate import Accelerator

    accelerator = Accelerator(cpu=True)
    torch.manual_seed(0)
    x = torch.randn(NUM_SAMPLES, 3)
    y = (x.sum(dim=1) > 0).long()
    dataloader = DataLoader(TensorDataset(x, y), batch_size=4)
    model = torch.nn.Linear(3, 2)
    model, dataloader = accelerator.prepare(model, dataloader)
    model.eval()
    all_preds, all_refs = [], []
    for inputs, labels in dataloader:
        with torch.inference_mode():
            logits = model(inputs)
        preds, refs = accelerator.gather_for_metrics((logits.argmax(dim=-1), labels))
        all_preds.append(preds)
        all_refs.append(refs)
    preds, refs = torch.cat(all_preds), torch.cat(all_refs)
    assert len(preds) == NUM_SAMPLES, len(preds)
    accuracy = (preds == refs).float().mean().item()
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        print(f"accuracy {accuracy:.3f} on {len(preds)} samples")
    return accuracy


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
