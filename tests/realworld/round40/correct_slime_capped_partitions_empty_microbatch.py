"""slime dynamic batch size with an empty micro-batch turned into a zero-weight 1-token placeholder.

Source: THUDM/slime issue #1838 and PR #1860 ("fix: guard DP-imbalance empty micro-batches under dynamic batching"):
``get_batch`` "fabricate[s] a 1-token placeholder when ``tokens=[]``", with a zero loss mask so it contributes
nothing, and every data-parallel rank runs the all-reduced number of micro-batches. Modelled on
the functions the issue and PR name: ``get_data_iterator`` / ``_get_capped_partitions`` / ``get_batch``.

Rank 0 has three 6-token rollouts, rank 1 three short ones; both run 3 micro-batches (rank 1: one real, two
placeholders) and meet in the gradient all-reduce.
"""

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

MAX_TOKENS_PER_GPU = 8
VOCAB, HIDDEN = 13, 4
PAD_TOKEN = 0


def first_fit(lengths, cap):
    bins, sums = [], []
    for i, n in enumerate(lengths):
        for b in range(len(bins)):
            if sums[b] + n <= cap:
                bins[b].append(i)
                sums[b] += n
                break
        else:
            bins.append([i])
            sums.append(n)
    return bins


def get_capped_partitions(lengths, k, cap):
    bins = first_fit(lengths, cap)
    return bins + [[] for _ in range(k - len(bins))]


def get_data_iterator(rollouts):
    lengths = [len(r) for r in rollouts]
    num_microbatches = torch.tensor([len(first_fit(lengths, MAX_TOKENS_PER_GPU))])
    dist.all_reduce(num_microbatches, op=dist.ReduceOp.MAX)
    return get_capped_partitions(lengths, int(num_microbatches.item()), MAX_TOKENS_PER_GPU)


def get_batch(rollouts, partition):
    if not partition:
        return torch.tensor([PAD_TOKEN]), torch.zeros(1)
    tokens = torch.cat([torch.tensor(rollouts[i]) for i in partition])
    loss_mask = torch.ones_like(tokens, dtype=torch.float)
    return tokens, loss_mask


def train_step(model, rollouts):
    model.zero_grad()
    for partition in get_data_iterator(rollouts):
        tokens, loss_mask = get_batch(rollouts, partition)
        loss = (model(tokens).pow(2).mean(-1) * loss_mask).sum() / loss_mask.sum().clamp(min=1)
        loss.backward()
    for p in model.parameters():
        dist.all_reduce(p.grad)
    return sum(p.grad.abs().sum().item() for p in model.parameters())


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Embedding(VOCAB, HIDDEN), torch.nn.Linear(HIDDEN, 2))
    rollouts = {0: [[1, 2, 3, 4, 5, 6], [2, 3, 4, 5, 6, 7], [3, 4, 5, 6, 7, 8]],
                1: [[9, 10], [11, 12, 1], [4, 2]]}[rank]
    norm = train_step(model, rollouts)
    print(f"[rank {rank}] step done, grad L1 {norm:.4f}", flush=True)


if __name__ == "__main__":
    from datetime import timedelta

    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
