"""NVIDIA recsys-examples (HSTU): the batch all-gather pads ``num_candidates`` a second time on an incomplete batch.

Source: NVIDIA/recsys-examples issue #361 (2026, "BaseBatch dense tensor shape convention inconsistency with padded
fields (num_candidates)"), fixed by PR #362 ("unify dense tensor padding convention (dim-0 == batch_size)").
``pad_and_allgather_batch`` assumed that every dense field of a batch has ``actual_batch_size`` rows, computed the
elements per sample as ``numel // actual_batch_size`` and padded each field to ``batch_size`` samples before
``all_gather_into_tensor``. But the dataloader had already padded ``num_candidates`` to ``batch_size``; on an
incomplete batch (the issue's example: 128 entries, 11 real samples, 128 // 11 = 11 "elements per sample") the field
is padded to 1408 entries on that rank while the other ranks send 128, and the all-gather hangs. The fix makes the
convention uniform -- every dense field has ``batch_size`` rows, padded by the dataloader -- and gathers dense
fields as they are.

What this item does: two ranks each read their own part of a ranking dataset (rank 0: 16 users, rank 1: 11) in
batches of 8 through a dataloader that pads ``num_candidates`` to the batch size but leaves the labels at the real
batch size (the two conventions the issue found side by side). Before each step the batches of all ranks are
all-gathered (the jagged item-id feature through its lengths and a values all-gather, then the dense fields), as
the HSTU trainer does for its cross-rank batch shuffler, and a small embedding-bag model trains on the gathered
batch with its gradients all-reduced.

The bug: at step 2 rank 1's batch has 3 real samples; ``8 // 3 = 2`` elements per sample pads ``num_candidates`` to
16 entries while rank 0 sends 8, so the two ranks' ``all_gather_into_tensor`` calls disagree in size.
"""

from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15

BATCH_SIZE = 8
USERS_PER_RANK = (16, 11)
NUM_ITEMS = 50
EMB_DIM = 4


class Batch:
    """A reduced HSTU batch: a jagged item-id history plus dense fields."""

    def __init__(self, lengths, values, labels, num_candidates, actual_batch_size):
        self.lengths = lengths  # (batch_size,), zero-padded
        self.values = values  # (sum(lengths),)
        self.labels = labels  # (actual_batch_size,) -- not padded by the loader
        self.num_candidates = num_candidates  # (batch_size,) -- padded by the loader
        self.actual_batch_size = actual_batch_size


def pad_tensor(t: torch.Tensor, size: int) -> torch.Tensor:
    return torch.cat([t, t.new_zeros(size - t.shape[0])]) if t.shape[0] < size else t


def rank_batches(rank: int):
    gen = torch.Generator().manual_seed(100 + rank)
    users = USERS_PER_RANK[rank]
    for start in range(0, users, BATCH_SIZE):
        n = min(BATCH_SIZE, users - start)
        lengths = torch.randint(1, 5, (n,), generator=gen)
        values = torch.randint(0, NUM_ITEMS, (int(lengths.sum()),), generator=gen)
        labels = torch.randint(0, 2, (n,), generator=gen).float()
        num_candidates = torch.randint(1, 4, (n,), generator=gen)
        yield Batch(
            pad_tensor(lengths, BATCH_SIZE),
            values,
            labels,
            pad_tensor(num_candidates, BATCH_SIZE),  # the loader pads this field, not the labels
            n,
        )


def allgather_dense(t: torch.Tensor, actual_batch_size: int) -> torch.Tensor:
    eps = t.numel() // actual_batch_size  # BUG
    padded = pad_tensor(t.reshape(-1), BATCH_SIZE * eps)
    out = padded.new_empty(padded.numel() * dist.get_world_size())
    dist.all_gather_into_tensor(out, padded)  # WAITS
    return out


def allgather_jagged(lengths: torch.Tensor, values: torch.Tensor):
    all_lengths = lengths.new_empty(lengths.numel() * dist.get_world_size())
    dist.all_gather_into_tensor(all_lengths, lengths)
    per_rank = all_lengths.view(dist.get_world_size(), -1).sum(dim=1)
    longest = int(per_rank.max())
    out = values.new_empty(longest * dist.get_world_size())
    dist.all_gather_into_tensor(out, pad_tensor(values, longest))
    chunks = out.view(dist.get_world_size(), longest)
    return all_lengths, torch.cat([chunks[r, : int(per_rank[r])] for r in range(dist.get_world_size())])


def pad_and_allgather_batch(batch: Batch):
    lengths, values = allgather_jagged(batch.lengths, batch.values)
    labels = allgather_dense(batch.labels, batch.actual_batch_size)
    num_candidates = allgather_dense(batch.num_candidates, batch.actual_batch_size)  # WAITS
    return lengths, values, labels, num_candidates


def train_step(model, head, opt, batch: Batch) -> float:
    lengths, values, labels, _num_candidates = pad_and_allgather_batch(batch)  # WAITS
    offsets = torch.cat([lengths.new_zeros(1), lengths.cumsum(0)[:-1]])
    logits = head(model(values, offsets)).squeeze(-1)
    mask = lengths > 0
    loss = torch.nn.functional.binary_cross_entropy_with_logits(logits[mask], labels[mask])
    opt.zero_grad()
    loss.backward()
    for p in list(model.parameters()) + list(head.parameters()):
        dist.all_reduce(p.grad)
        p.grad /= dist.get_world_size()
    opt.step()
    return float(loss)


def worker() -> None:
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = torch.nn.EmbeddingBag(NUM_ITEMS, EMB_DIM, mode="mean")
    head = torch.nn.Linear(EMB_DIM, 1)
    opt = torch.optim.SGD(list(model.parameters()) + list(head.parameters()), lr=0.1)
    for step, batch in enumerate(rank_batches(rank), start=1):
        loss = train_step(model, head, opt, batch)  # WAITS
        print(f"rank {rank} step {step}: {batch.actual_batch_size} real samples, loss {loss:.4f}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
