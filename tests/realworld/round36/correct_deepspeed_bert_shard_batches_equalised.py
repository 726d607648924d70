"""DeepSpeed BERT pre-training (academic-budget-bert) with the same number of batches on every process: the processes
agree on the smallest shard's batch count (all-reduce MIN) and each trains on that many -- the condition under which
deepspeedai/DeepSpeed issue #2223 "completely disappears".

Models: deepspeedai/DeepSpeed issue #2223 ("[BUG] Training hangs when each process is trained on different number of
batches": "The root cause is — each process trains on batches of different size and its gets stuck during the
".step()" call on deepspeed engine object" -- rank 2 with 8 batches, the others with 4 -- "This issue completely
disappears, if same number of batches are provided to all the processes"). Code modelled (written here, not copied):
IntelLabs/academic-budget-bert ``run_pretraining.py`` -- ``train`` (``pretrain_dataset_provider.get_shard(index)``,
the batch loop: ``model.forward(batch)``, ``model.network.backward(total_loss)``, ``model.network.step()`` at the
gradient-accumulation boundary), ``pretrain_validation`` (the validation loss all-reduced over the processes after the
shard); DeepSpeed's ``DeepSpeedEngine.backward`` / ``step`` (the fp16 overflow check all-reduced with MAX, then the
gradient all-reduce and the optimizer step). Stand-ins: the engine (written here), a tiny masked-token model, and the
shard files (rank 0's holds 8 samples, rank 1's 12; batch 2 gives 4 and 6 batches).

Both ranks train 4 batches (rank 1 leaves its last 2 for the next epoch's reshuffle), then all-reduce their
validation statistics together. 2 ranks.
"""

import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

VOCAB = 20


class DeepSpeedEngine:
    def __init__(self, module, lr=0.05):
        self.module = module
        for p in module.parameters():
            dist.broadcast(p.data, src=0)
        self.optimizer = torch.optim.SGD(module.parameters(), lr=lr)
        self.global_steps = 0

    def forward(self, batch):
        tokens, labels = batch
        logits = self.module(tokens)
        return F.cross_entropy(logits.view(-1, VOCAB), labels.view(-1), ignore_index=-100)

    def backward(self, loss):
        loss.backward()

    def _check_overflow(self):
        overflow = torch.tensor([0.0])
        for p in self.module.parameters():
            if p.grad is not None and not torch.isfinite(p.grad).all():
                overflow.fill_(1.0)
        dist.all_reduce(overflow, op=dist.ReduceOp.MAX)
        return overflow.item() > 0

    def allreduce_gradients(self):
        grads = [p.grad for p in self.module.parameters()]
        flat = torch.cat([g.reshape(-1) for g in grads])
        dist.all_reduce(flat)
        flat /= dist.get_world_size()
        offset = 0
        for g in grads:
            g.copy_(flat[offset : offset + g.numel()].view_as(g))
            offset += g.numel()

    def step(self):
        if self._check_overflow():
            self.optimizer.zero_grad()
            return
        self.allreduce_gradients()
        self.optimizer.step()
        self.optimizer.zero_grad()
        self.global_steps += 1


class TinyMLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 16)
        self.out = nn.Linear(16, VOCAB)

    def forward(self, tokens):
        return self.out(torch.tanh(self.emb(tokens)))


class PreTrainingDatasetProvider:
    def __init__(self, samples_per_file):
        self.samples_per_file = samples_per_file

    def get_shard(self, index, batch_size=2):
        gen = torch.Generator().manual_seed(40 + index)
        n = self.samples_per_file[index]
        tokens = torch.randint(0, VOCAB, (n, 8), generator=gen)
        labels = torch.where(torch.rand(n, 8, generator=gen) < 0.3, tokens, torch.full_like(tokens, -100))
        return [(tokens[i : i + batch_size], labels[i : i + batch_size]) for i in range(0, n, batch_size)]


def pretrain_validation(engine, val_batches):
    stats = torch.zeros(3)
    with torch.no_grad():
        for batch in val_batches:
            stats[0] += engine.forward(batch).item()
            stats[1] += 1
    stats[2] = engine.global_steps
    dist.all_reduce(stats)
    return stats[0].item() / stats[1].item()


def train(engine, provider, index):
    dataset_iterator = provider.get_shard(index)
    num_batches = torch.tensor([len(dataset_iterator)])
    dist.all_reduce(num_batches, op=dist.ReduceOp.MIN)  # same number of batches on every process
    dataset_iterator = dataset_iterator[: int(num_batches)]
    for batch in dataset_iterator:
        total_loss = engine.forward(batch)
        engine.backward(total_loss)
        engine.step()
    return len(dataset_iterator)


def worker():
    rank = dist.get_rank()
    torch.manual_seed(rank)
    engine = DeepSpeedEngine(TinyMLM())
    provider = PreTrainingDatasetProvider(samples_per_file=[8, 12])
    n_batches = train(engine, provider, rank)
    val_loss = pretrain_validation(engine, provider.get_shard(0)[:2])
    print(f"[rank {rank}] {n_batches} batches, {engine.global_steps} steps, validation loss {val_loss:.4f}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
