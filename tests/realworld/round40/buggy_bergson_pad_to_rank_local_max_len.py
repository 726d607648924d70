"""bergson's MAGIC trainer: every rank pads its batch to its *own* longest sequence, so the per-token tensors that are
reduced across ranks have different shapes.

Source: EleutherAI/bergson PR #227 ("Fix distributed hangs": "Batches were not getting padded properly, so that
different ranks were seeing batches with different numbers of tokens"), follow-up PR #268 (the ``all_reduce(MAX)`` on
``max_len`` in ``pad_and_tensor`` "to make activation shapes identical across ranks for the MAGIC trainer"); modelled
on ``bergson/utils.py`` ``pad_and_tensor`` and the MAGIC trainer's per-token weight gradients, which are summed over
the data-parallel ranks.

Rank 0's batch has sequences of up to 5 tokens, rank 1's of up to 3. Padded locally the per-token weight gradients
are ``[2, 5]`` and ``[2, 3]`` and their all-reduce is a collective of mismatched sizes (the thread: "everything hangs
(crashes on one rank)").

BUG: ``max_len`` is the rank's own maximum.
"""

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15

VOCAB, HIDDEN = 11, 4


def pad_and_tensor(sequences, padding_value=0):
    max_len = max(len(seq) for seq in sequences)  # BUG
    padded = [seq + [padding_value] * (max_len - len(seq)) for seq in sequences]
    labels = [seq + [-100] * (max_len - len(seq)) for seq in sequences]
    return torch.tensor(padded), torch.tensor(labels)


def per_token_loss(embed, head, tokens, labels):
    logits = head(embed(tokens))
    loss = torch.nn.functional.cross_entropy(logits.transpose(1, 2), labels.clamp(min=0), reduction="none")
    return loss * (labels != -100)


def magic_step(embed, head, sequences):
    tokens, labels = pad_and_tensor(sequences)
    weights = torch.ones(tokens.shape, requires_grad=True)  # per-token data weights
    loss = (per_token_loss(embed, head, tokens, labels) * weights).sum()
    (weight_grad,) = torch.autograd.grad(loss, weights)
    dist.all_reduce(weight_grad)  # WAITS
    return weight_grad


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    embed, head = torch.nn.Embedding(VOCAB, HIDDEN), torch.nn.Linear(HIDDEN, VOCAB)
    batches = {0: [[1, 2, 3, 4, 5], [6, 7]], 1: [[8, 9, 10], [2, 4]]}
    grad = magic_step(embed, head, batches[rank])  # WAITS
    print(f"[rank {rank}] weight-grad shape {tuple(grad.shape)}, sum {grad.sum().item():.4f}", flush=True)


if __name__ == "__main__":
    from datetime import timedelta

    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
