"""vLLM speculators (draft-model training): the validation loop has no per-batch synchronisation, the ranks' batches
carry skewed sample counts, and the fast rank waits in the end-of-validation metrics all-reduce longer than the
process-group timeout.

Models: vllm-project/speculators PR #867 ("fix(train): balance sampler sample counts and bound validation rank skew":
"after PR #813 removed per-batch validation all-reduce, cross-rank speed differences in the validation loop accumulate
unboundedly. With the sample-count skew above, the fastest rank finishes validation minutes before the slowest, and
the final metrics `all_reduce` trips the NCCL watchdog ... A new `_maybe_val_sync` method issues a `dist.barrier()`
every 50 validation batches, bounding drift well below the watchdog window"; root cause: "LPT slot-id tie-breaking
bias -> 2.4x val sample-count skew -> no per-batch sync (post-#813) -> drift exceeds NCCL watchdog"). Code modelled
(written here, not copied): the speculators trainer's validation epoch (per-batch forward of the draft model under
``torch.no_grad``, local sums of loss and accepted-token counts, one ``all_reduce`` of the metrics at the end) and the
multipack batch sampler giving each rank the same number of batches with different sample counts. Scaled stand-ins: the
watchdog is the 3 s process-group timeout; a validation batch costs 0.6 s on rank 0 and 0.25 s on rank 1 (the 2.4x
sample-count skew, as compute time); the barrier comes every 4 batches instead of 50.

The bug: ten unsynchronised validation batches put rank 0 3.5 s behind; rank 1 waits in the metrics all-reduce past
the 3 s timeout. The other half of the PR (rebalancing the sampler) is not modelled: the skew is kept in both twins.
2 ranks.
"""

import datetime
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 3

VAL_BATCHES = 10
SECONDS_PER_BATCH = {0: 0.6, 1: 0.25}


class DraftModel(nn.Module):
    def __init__(self, hidden=32, vocab=64):
        super().__init__()
        self.fc = nn.Linear(2 * hidden, hidden)
        self.lm_head = nn.Linear(hidden, vocab)

    def forward(self, hidden_states, verifier_states):
        return self.lm_head(F.silu(self.fc(torch.cat([hidden_states, verifier_states], dim=-1))))


class MultipackValLoader:
    def __init__(self, rank):
        self.rank = rank
        self.gen = torch.Generator().manual_seed(500 + rank)

    def __len__(self):
        return VAL_BATCHES

    def __iter__(self):
        for _ in range(VAL_BATCHES):
            h = torch.randn(16, 32, generator=self.gen)
            v = torch.randn(16, 32, generator=self.gen)
            yield h, v, torch.randint(0, 64, (16,), generator=self.gen)


class Trainer:
    def __init__(self, model):
        self.model = model

    def val_epoch(self, val_loader):
        rank = dist.get_rank()
        self.model.eval()
        loss_sum = torch.tensor(0.0)
        correct = torch.tensor(0.0)
        tokens = torch.tensor(0.0)
        with torch.no_grad():
            for batch_idx, (h, v, targets) in enumerate(val_loader):  # BUG
                logits = self.model(h, v)
                time.sleep(SECONDS_PER_BATCH[rank])
                loss_sum += F.cross_entropy(logits, targets, reduction="sum")
                correct += (logits.argmax(dim=-1) == targets).sum()
                tokens += targets.numel()
        metrics = torch.stack([loss_sum, correct, tokens])
        dist.all_reduce(metrics)  # WAITS
        return (metrics[0] / metrics[2]).item(), (metrics[1] / metrics[2]).item()


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    trainer = Trainer(DraftModel())
    start = time.monotonic()
    val_loss, val_acc = trainer.val_epoch(MultipackValLoader(rank))  # WAITS
    print(f"[rank {rank}] val_loss {val_loss:.4f} val_acc {val_acc:.4f} "
          f"({time.monotonic() - start:.1f} s)", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
