"""bergson's MAGIC trainer with the padding length agreed across ranks before padding.

Source: EleutherAI/bergson PR #227 ("Fix distributed hangs") and PR #268, whose ``pad_and_tensor`` takes the local
``max_len`` and, when ``torch.distributed`` is initialised, ``all_reduce``s it with ``ReduceOp.MAX`` before padding
"to make activation shapes identical across ranks for the MAGIC trainer". Modelled on ``bergson/utils.py``
``pad_and_tensor`` and the MAGIC trainer's per-token weight gradients.

Rank 0's sequences have up to 5 tokens, rank 1's up to 3; both pad to 5 and the per-token weight gradients are
all-reduced as ``[2, 5]`` on both ranks.
"""

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

VOCAB, HIDDEN = 11, 4


def pad_and_tensor(sequences, padding_value=0):
    max_len = max(len(seq) for seq in sequences)
    if dist.is_initialized():
        max_len_tensor = torch.tensor(max_len)
        dist.all_reduce(max_len_tensor, op=dist.ReduceOp.MAX)
        max_len = int(max_len_tensor)
    padded = [seq + [padding_value] * (max_len - len(seq)) for seq in sequences]
    labels = [seq + [-100] * (max_len - len(seq)) for seq in sequences]
    return torch.tensor(padded), torch.tensor(labels)


def per_token_loss(embed, head, tokens, labels):
    logits = head(embed(tokens))
    loss = torch.nn.functional.cross_entropy(logits.transpose(1, 2), labels.clamp(min=0), reduction="none")
    return loss * (labels != -100)


def magic_step(embed, head, sequences):
    tokens, labels = pad_and_tensor(sequences)
    weights = torch.ones(tokens.shape, requires_grad=True)
    loss = (per_token_loss(embed, head, tokens, labels) * weights).sum()
    (weight_grad,) = torch.autograd.grad(loss, weights)
    dist.all_reduce(weight_grad)
    return weight_grad


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    embed, head = torch.nn.Embedding(VOCAB, HIDDEN), torch.nn.Linear(HIDDEN, VOCAB)
    batches = {0: [[1, 2, 3, 4, 5], [6, 7]], 1: [[8, 9, 10], [2, 4]]}
    grad = magic_step(embed, head, batches[rank])
    print(f"[rank {rank}] weight-grad shape {tuple(grad.shape)}, sum {grad.sum().item():.4f}", flush=True)


if __name__ == "__main__":
    from datetime import timedelta

    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
