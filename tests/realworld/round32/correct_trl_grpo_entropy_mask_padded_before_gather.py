"""TRL's GRPOTrainer with ``top_entropy_quantile < 1``: the non-pad entropies padded to a common length before the gather.

Models: huggingface/trl issue #3933 ("`GRPOTrainer` with `top_entropy_quntile < 1` causes hang with multi gpu
training": "this is because of the gather in the function `get_high_entropy_mask` ... `non_pad_entropies` have
different lengths on each" process), fixed by PR #3964 ("the `gather` operation to gather the non_padded entropy
tensor can have different shapes on different devices"; the fix gathers the counts, pads to the longest and gathers
the padded tensors). Code modelled (written here, not copied): ``trl/trainer/grpo_trainer.py``
``GRPOTrainer.get_high_entropy_mask`` after PR #3833 (``entropies[mask.bool()]``, ``self.accelerator.gather``,
``torch.quantile`` of the gathered values, the mask ``entropies >= threshold``) and ``_compute_loss`` (per-token
log-probabilities and entropies, the completion mask, the entropy mask multiplied into the loss); accelerate's
``gather`` for a tensor (``_gpu_gather_one``: an output of ``num_processes * numel`` elements filled by
``all_gather_into_tensor``).

The fix modelled is PR #3964's: every process gathers its count of non-pad tokens, pads its entropies to the largest
count with a sentinel (entropies are never negative, so -1 cannot be a real value), gathers the padded tensors, drops
the sentinels and takes the quantile of the real values. 2 ranks, a tiny policy under DDP, two completions per
process per step with different lengths (8 and 10 non-pad tokens at step 1); both ranks take the same threshold and
train three steps.
"""

import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

VOCAB = 12
NUM_STEPS = 3
TOP_ENTROPY_QUANTILE = 0.2
# completion lengths per step, per process: (rank 0's two completions, rank 1's two completions)
COMPLETION_LENGTHS = [((5, 3), (6, 4)), ((4, 4), (2, 7)), ((6, 6), (3, 3))]
MAX_COMPLETION = 7
PAD_VALUE = -1.0


class Accelerator:
    """The two calls of accelerate the trainer uses here."""

    def __init__(self):
        self.num_processes = dist.get_world_size()
        self.process_index = dist.get_rank()

    def gather(self, tensor):
        output = torch.empty(self.num_processes * tensor.numel(), dtype=tensor.dtype)
        dist.all_gather_into_tensor(output, tensor.contiguous())
        return output.view(-1, *tensor.shape[1:])


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 16)
        self.head = nn.Linear(16, VOCAB)

    def forward(self, ids):
        return self.head(torch.tanh(self.embed(ids)))


class GRPOTrainer:
    def __init__(self, accelerator):
        self.accelerator = accelerator
        torch.manual_seed(0)
        self.model = DDP(Policy())
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.top_entropy_quantile = TOP_ENTROPY_QUANTILE

    def get_high_entropy_mask(self, entropies, mask, threshold):
        non_pad_entropies = entropies[mask.bool()].float()
        counts = self.accelerator.gather(torch.tensor([non_pad_entropies.numel()]))
        max_count = int(counts.max())
        padded = torch.full((max_count,), PAD_VALUE)
        padded[: non_pad_entropies.numel()] = non_pad_entropies
        all_padded = self.accelerator.gather(padded)
        all_non_pad_entropies = all_padded[all_padded != PAD_VALUE]
        entropy_threshold = torch.quantile(all_non_pad_entropies, threshold)
        return (entropies >= entropy_threshold) & mask.bool()

    def make_batch(self, step):
        rank = self.accelerator.process_index
        lengths = COMPLETION_LENGTHS[step][rank]
        g = torch.Generator().manual_seed(100 * step + rank)
        ids = torch.randint(0, VOCAB, (len(lengths), MAX_COMPLETION), generator=g)
        mask = torch.zeros(len(lengths), MAX_COMPLETION)
        for row, n in enumerate(lengths):
            mask[row, :n] = 1.0
        advantages = torch.randn(len(lengths), generator=g)
        return ids, mask, advantages

    def compute_loss(self, ids, mask, advantages):
        logits = self.model(ids)
        logps_all = torch.log_softmax(logits, dim=-1)
        per_token_logps = logps_all.gather(-1, ids.unsqueeze(-1)).squeeze(-1)
        entropies = -(logps_all.exp() * logps_all).sum(-1).detach()
        entropy_mask = self.get_high_entropy_mask(entropies, mask, 1.0 - self.top_entropy_quantile)
        per_token_loss = -per_token_logps * advantages.unsqueeze(1) * entropy_mask
        return per_token_loss.sum() / mask.sum().clamp(min=1.0), int(entropy_mask.sum())

    def train(self):
        for step in range(NUM_STEPS):
            ids, mask, advantages = self.make_batch(step)
            loss, kept = self.compute_loss(ids, mask, advantages)
            loss.backward()
            self.optimizer.step()
            self.optimizer.zero_grad()
            print(f"[rank {self.accelerator.process_index}] step {step + 1}: loss {loss.item():.4f}, "
                  f"{kept} of {int(mask.sum())} tokens above the entropy threshold", flush=True)


def worker():
    trainer = GRPOTrainer(Accelerator())
    trainer.train()
    dist.barrier()
    print(f"[rank {dist.get_rank()}] training done", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
