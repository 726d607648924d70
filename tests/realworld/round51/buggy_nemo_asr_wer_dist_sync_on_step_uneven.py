"""NeMo ASR: a WER metric that syncs on every step, over validation batches the sampler splits unevenly.

Source: NVIDIA-NeMo/Speech PR #8676 (2024, "removign dist_sync from asr related models to prevent desync"): "There's
a technical bug where unbalanced distribution of data across distributed setting can cause a desync with torch
Metrics. (This is primarily a case with Lhotse dataloaders.)" The PR removes ``dist_sync_on_step`` from the ASR
models' metrics and turns off ``sync_on_compute`` for WER and BLEU, since the models already aggregate the batch
numerators and denominators at the end of the epoch. (The PR was closed unmerged; the cause and the fix are the
PR's own.)

What this item does: a tiny CTC-like recogniser trains one step per epoch (gradients all-reduced) and then
validates. Validation cuts are split between two ranks and batched by total duration, as Lhotse's dynamic bucketing
sampler does, so rank 0 gets three validation batches and rank 1 two. The word error rate is a torchmetrics-style
metric: ``forward`` updates the local error and word counts and, with ``dist_sync_on_step``, all-reduces the batch
counts to log a global per-step value; ``compute`` all-reduces the accumulated counts (``sync_on_compute``). The run
ends with the trainer's teardown barrier.

The bug: ``dist_sync_on_step=True`` puts one collective into every validation step, and the ranks have different
numbers of steps. Rank 0's third step all-reduce pairs with rank 1's ``compute`` all-reduce (same size, silently
wrong numbers); rank 0's own ``compute`` all-reduce then meets rank 1's teardown barrier, and the two ranks wait.
"""

from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15

VOCAB = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran"]
FEAT = 6
MAX_DURATION = 9.0  # seconds of audio per batch


def make_cuts():
    gen = torch.Generator().manual_seed(8676)
    cuts = []
    for i in range(10):
        n_words = 2 + i % 3
        words = torch.randint(0, len(VOCAB), (n_words,), generator=gen)
        noise = 0.3 * torch.randn(n_words, FEAT, generator=gen)
        feats = torch.nn.functional.one_hot(words % FEAT, FEAT).float() + noise
        duration = 1.0 + 0.6 * n_words + (2.5 if i in (0, 2) else 0.0)
        cuts.append({"id": f"cut-{i}", "duration": duration, "feats": feats, "words": words})
    return cuts


def dynamic_batches(cuts, rank, world_size):
    """Each rank takes every world_size-th cut and packs them into batches of at most MAX_DURATION seconds."""
    batch, total = [], 0.0
    for cut in cuts[rank::world_size]:
        if batch and total + cut["duration"] > MAX_DURATION:
            yield batch
            batch, total = [], 0.0
        batch.append(cut)
        total += cut["duration"]
    if batch:
        yield batch


def edit_distance(hyp, ref) -> int:
    row = list(range(len(ref) + 1))
    for i, h in enumerate(hyp, start=1):
        prev, row[0] = row[0], i
        for j, r in enumerate(ref, start=1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (h != r))
    return row[-1]


class WordErrorRate:
    """torchmetrics-style: local states, an optional sync per step and a sync on compute."""

    def __init__(self, dist_sync_on_step: bool, sync_on_compute: bool) -> None:
        self.dist_sync_on_step = dist_sync_on_step
        self.sync_on_compute = sync_on_compute
        self.counts = torch.zeros(2)  # errors, words

    def forward(self, hyps, refs) -> float:
        batch = torch.tensor([float(sum(edit_distance(h, r) for h, r in zip(hyps, refs))), float(sum(map(len, refs)))])
        self.counts += batch
        if self.dist_sync_on_step:
            dist.all_reduce(batch)
        return float(batch[0] / batch[1])

    def compute(self) -> float:
        counts = self.counts.clone()
        if self.sync_on_compute:
            dist.all_reduce(counts)  # WAITS
        return float(counts[0] / counts[1])


class TinyASR(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(FEAT, len(VOCAB))

    def forward(self, feats):
        return self.proj(feats)

    def transcribe(self, feats):
        return self.forward(feats).argmax(-1).tolist()


def train_step(model, opt, cuts) -> None:
    loss = sum(torch.nn.functional.cross_entropy(model(c["feats"]), c["words"]) for c in cuts) / len(cuts)
    opt.zero_grad()
    loss.backward()
    for p in model.parameters():
        dist.all_reduce(p.grad)
        p.grad /= dist.get_world_size()
    opt.step()


def validate(model, cuts, rank, world_size) -> float:
    wer = WordErrorRate(dist_sync_on_step=True, sync_on_compute=True)  # BUG
    with torch.no_grad():
        for step, batch in enumerate(dynamic_batches(cuts, rank, world_size), start=1):
            hyps = [model.transcribe(c["feats"]) for c in batch]
            step_wer = wer.forward(hyps, [c["words"].tolist() for c in batch])
            print(f"rank {rank} val step {step}: {len(batch)} cuts, step wer {step_wer:.3f}", flush=True)
    return wer.compute()  # WAITS


def worker() -> None:
    rank, world_size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = TinyASR()
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    cuts = make_cuts()
    train_cuts = cuts[rank::world_size][:4]
    train_step(model, opt, train_cuts)
    val_wer = validate(model, cuts, rank, world_size)  # WAITS
    print(f"rank {rank}: val_wer {val_wer:.3f}", flush=True)
    dist.barrier()  # the trainer's teardown  # WAITS


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
