"""AllenNLP (GradientDescentTrainer) -- the "another worker is done" check runs before every batch of a
gradient-accumulation group (PR #5100).

Source: allenai/allennlp issue #5088 ("Multi-GPU training hangs"; the maintainer's workaround: make the number of
instances an even multiple of the batch size) and PR #5100 ("Distributed training with gradient accumulation",
commit 1bfd8b5, with a test over ``max_instances`` x ``num_gradient_accumulation_steps`` x ``batch_size``). Modelled
on ``allennlp/training/trainer.py`` ``GradientDescentTrainer._train_epoch`` before that commit: for each batch group
(``lazy_groups_of(batches, num_gradient_accumulation_steps)``) a distributed worker first all-reduces a ``done`` flag
and stops early if another worker already finished; a worker that runs out of data all-reduces ``done = 1``; then a
barrier. Each worker reads its own shard of the instances (``instances[rank::world_size]``), so shards differ by one.

What it does: 11 instances, batch size 1, accumulation over 2 batches: worker 0 has 6 batches (groups 2 + 2 + 2),
worker 1 has 5 (2 + 2 + 1). Every batch goes through the DDP-wrapped model and its backward all-reduces the
gradients.

The fix (PR #5100): the done check moves inside the group, before every batch, and a group in which a worker ran no
batch at all is skipped (``if len(batch_group_outputs) <= 0: continue``). In the third group worker 0's check before
its sixth batch meets worker 1's ``done = 1``, so worker 0 stops early and both reach the barrier.
"""

from datetime import timedelta
from itertools import islice

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

NUM_INSTANCES = 11
GRAD_ACC = 2


def lazy_groups_of(iterable, group_size):
    iterator = iter(iterable)
    while True:
        s = list(islice(iterator, group_size))
        if not s:
            return
        yield s


class SimpleTagger(nn.Module):
    def __init__(self, vocab=20, dim=8, num_tags=4):
        super().__init__()
        self.embedder = nn.Embedding(vocab, dim)
        self.encoder = nn.Linear(dim, dim)
        self.projection = nn.Linear(dim, num_tags)

    def forward(self, tokens, tags):
        logits = self.projection(torch.tanh(self.encoder(self.embedder(tokens))))
        return {"loss": nn.functional.cross_entropy(logits.view(-1, logits.shape[-1]), tags.view(-1))}


def read_instances():
    g = torch.Generator().manual_seed(1)
    return [(torch.randint(0, 20, (1, 5), generator=g), torch.randint(0, 4, (1, 5), generator=g))
            for _ in range(NUM_INSTANCES)]


class GradientDescentTrainer:
    def __init__(self, model, data_loader, num_gradient_accumulation_steps):
        self._pytorch_model = DDP(model)
        self.optimizer = torch.optim.Adam(self._pytorch_model.parameters(), lr=1e-2)
        self.data_loader = data_loader
        self._num_gradient_accumulation_steps = num_gradient_accumulation_steps
        self._distributed = True

    def batch_outputs(self, batch):
        tokens, tags = batch
        return self._pytorch_model(tokens, tags)

    def _train_epoch(self, epoch):
        rank = dist.get_rank()
        train_loss, batches_this_epoch = 0.0, 0
        done_early = False
        for batch_group in lazy_groups_of(self.data_loader, self._num_gradient_accumulation_steps):
            if done_early:
                break

            batches_this_epoch += 1
            self.optimizer.zero_grad()
            batch_loss = 0.0
            batch_group_outputs = []
            for batch in batch_group:
                if self._distributed:
                    # Check whether the other workers have stopped already (due to differing amounts of data in each).
                    done = torch.tensor(0)
                    dist.all_reduce(done, dist.ReduceOp.SUM)
                    if done.item() > 0:
                        done_early = True
                        print(f"[rank {rank}] Worker {rank} finishing training early!")
                        break
                outputs = self.batch_outputs(batch)
                batch_group_outputs.append(outputs)
                loss = outputs["loss"] / len(batch_group)
                batch_loss += loss.item()
                loss.backward()
            if len(batch_group_outputs) <= 0:
                continue
            train_loss += batch_loss
            self.optimizer.step()

        if self._distributed and not done_early:
            print(f"[rank {rank}] Worker {rank} completed its entire epoch (training).")
            # Indicate that we're done so that any workers that have remaining data stop the epoch early.
            done = torch.tensor(1)
            dist.all_reduce(done, dist.ReduceOp.SUM)
            assert done.item()

        # Let all workers finish their epoch before computing the final statistics for the epoch.
        if self._distributed:
            dist.barrier()
        return {"loss": train_loss / max(batches_this_epoch, 1), "batches": batches_this_epoch}

    def train(self, num_epochs=1):
        metrics = {}
        for epoch in range(num_epochs):
            metrics = self._train_epoch(epoch)
        return metrics


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    data_loader = read_instances()[rank::world]  # MultiProcessDataLoader: each worker reads its own shard
    trainer = GradientDescentTrainer(SimpleTagger(), data_loader, num_gradient_accumulation_steps=GRAD_ACC)
    metrics = trainer.train()
    print(f"[rank {rank}] epoch metrics: loss {metrics['loss']:.4f} over {metrics['batches']} batch groups")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
