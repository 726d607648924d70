"""NVIDIA recsys-examples (HSTU): every dense field padded to the batch size by the loader and gathered as it is.

Source: NVIDIA/recsys-examples issue #361 (2026, "BaseBatch dense tensor shape convention inconsistency with padded
fields (num_candidates)") and its fix, PR #362 ("unify dense tensor padding convention (dim-0 == batch_size)").
``pad_and_allgather_batch`` had derived the elements per sample of each dense field from ``numel //
actual_batch_size``, which is wrong for ``num_candidates`` (already padded to ``batch_size`` by the dataloader) on an
incomplete batch, and the ranks' ``all_gather_into_tensor`` sizes then disagreed. The fix (modelled here): one
convention -- dim 0 of every dense field is ``batch_size``, padded by the dataloader -- and the all-gather of a
dense field pads nothing.

What this item does: two ranks each read their own part of a ranking dataset (rank 0: 16 users, rank 1: 11) in
batches of 8; the loader pads the item-id lengths, the labels and ``num_candidates`` to 8 rows. Before each step the
batches of all ranks are all-gathered (the jagged item-id feature through its lengths and a values all-gather, then
the dense fields), and a small embedding-bag model trains on the gathered batch with its gradients all-reduced.
Rank 1's second batch has 3 real samples; every all-gather still has the same size on both ranks; exits 0.
"""

from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "correct"
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
        self.labels = labels  # (batch_size,), zero-padded
        self.num_candidates = num_candidates  # (batch_size,), zero-padded
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
            pad_tensor(labels, BATCH_SIZE),
            pad_tensor(num_candidates, BATCH_SIZE),
            n,
        )


def allgather_dense(t: torch.Tensor) -> torch.Tensor:
    # every dense field already has batch_size rows
    out = t.new_empty(t.numel() * dist.get_world_size())
    dist.all_gather_into_tensor(out, t.contiguous())
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
    labels = allgather_dense(batch.labels)
    num_candidates = allgather_dense(batch.num_candidates)
    return lengths, values, labels, num_candidates


def train_step(model, head, opt, batch: Batch) -> float:
    lengths, values, labels, _num_candidates = pad_and_allgather_batch(batch)
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
        loss = train_step(model, head, opt, batch)
        print(f"rank {rank} step {step}: {batch.actual_batch_size} real samples, loss {loss:.4f}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
