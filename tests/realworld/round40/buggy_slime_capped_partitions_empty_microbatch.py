"""slime dynamic batch size: after the data-parallel ranks agree on the largest micro-batch count, the first-fit
fallback leaves trailing micro-batches *empty* on a light rank, and ``get_batch`` fails on the first one.

Source: THUDM/slime issue #1838 ("``_get_capped_partitions`` produces empty partitions when ``num_microbatches`` is
all-reduced across DP ranks"), PR #1860 ("fix: guard DP-imbalance empty micro-batches under dynamic batching");
modelled on the functions the issue and PR name (their source file was not in the searchable store):
``get_data_iterator`` (per-rank ``get_minimum_num_micro_batch_size``, ``dist.all_reduce(..., op=ReduceOp.MAX)``, the
first-fit ``_get_capped_partitions`` fallback) and ``get_batch`` (``torch.cat`` of the micro-batch's tokens), followed
by the data-parallel gradient all-reduce after the micro-batch loop.

Rank 0 holds three 6-token rollouts (3 micro-batches under ``max_tokens_per_gpu = 8``), rank 1 three short ones
(1 micro-batch). The MAX is 3; first-fit packs all of rank 1's samples into bin 0, so micro-batch 1 is ``[]`` and
``torch.cat`` raises ``expected a non-empty list of Tensors`` (the issue's crash), while rank 0 finishes its three
micro-batches and waits in the gradient all-reduce.

BUG: ``get_batch`` assumes every micro-batch partition holds at least one sample.
"""

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15

MAX_TOKENS_PER_GPU = 8
VOCAB, HIDDEN = 13, 4


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
    tokens = torch.cat([torch.tensor(rollouts[i]) for i in partition])  # BUG
    loss_mask = torch.ones_like(tokens, dtype=torch.float)
    return tokens, loss_mask


def train_step(model, rollouts):
    model.zero_grad()
    for partition in get_data_iterator(rollouts):
        tokens, loss_mask = get_batch(rollouts, partition)
        loss = (model(tokens).pow(2).mean(-1) * loss_mask).sum() / loss_mask.sum().clamp(min=1)
        loss.backward()
    for p in model.parameters():  # finalize_model_grads: data-parallel all-reduce
        dist.all_reduce(p.grad)  # WAITS
    return sum(p.grad.abs().sum().item() for p in model.parameters())


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Embedding(VOCAB, HIDDEN), torch.nn.Linear(HIDDEN, 2))
    rollouts = {0: [[1, 2, 3, 4, 5, 6], [2, 3, 4, 5, 6, 7], [3, 4, 5, 6, 7, 8]],
                1: [[9, 10], [11, 12, 1], [4, 2]]}[rank]
    norm = train_step(model, rollouts)  # WAITS
    print(f"[rank {rank}] step done, grad L1 {norm:.4f}", flush=True)


if __name__ == "__main__":
    from datetime import timedelta

    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
