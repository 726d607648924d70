"""sentence-transformers: a cached (GradCache) loss under DDP replays each mini-batch's forward and backward inside
``no_sync()`` except the final mini-batch across all columns, so each step makes one gradient all-reduce however many
mini-batches a rank's texts pack into -- the fix of huggingface/sentence-transformers PR #4039.

Models: huggingface/sentence-transformers issue #4027 ("Cached losses (GradCache) trigger one DDP all-reduce per
mini-batch per column instead of one per step": "model.no_sync() is never called ... hang potential, leading to a
desync between DDP processes") and PR #4039 ("I've wrapped the replayed forward and backward passes in `no_sync()`,
except for the final mini-batch across all columns"; tested "including uneven token-budget mini-batches"). Code
modelled (written here, not copied): ``sentence_transformers/base/losses/gradcache.py`` -- ``_minibatch_ranges``
(greedy packing under ``mini_batch_num_tokens``), ``CachedLossMixin`` (embed without grad, loss and the gradients
w.r.t. the embeddings cached, a hook on the returned loss), ``_backward_hook`` (re-embed each mini-batch with grad,
``surrogate.backward()``); ``CachedMultipleNegativesRankingLoss`` (in-batch negatives, scale 20) (stand-ins: a
mean-pooled embedding model, padded token ids with an attention mask, a two-step training loop that averages the loss
for logging at the end).

Rank 0's anchors pack into 3 mini-batches and rank 1's into 2, but each rank synchronises only at its last replay:
one gradient all-reduce per step on both. 2 ranks.
"""

import bisect
import datetime
from contextlib import nullcontext
from functools import partial

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15


class MeanPooledEncoder(nn.Module):
    def __init__(self, vocab=50, dim=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim, padding_idx=0)
        self.dense = nn.Linear(dim, dim)

    def forward(self, input_ids, attention_mask):
        tok = self.embed(input_ids) * attention_mask.unsqueeze(-1)
        pooled = tok.sum(1) / attention_mask.sum(1, keepdim=True)
        return F.normalize(self.dense(pooled), dim=-1)


def _minibatch_ranges(feature, mini_batch_num_tokens):
    cumulative = feature["attention_mask"].sum(dim=1).cumsum(dim=0).tolist()
    ranges, begin = [], 0
    while begin < len(cumulative):
        previous = cumulative[begin - 1] if begin > 0 else 0
        end = max(bisect.bisect_right(cumulative, previous + mini_batch_num_tokens), begin + 1)
        ranges.append((begin, end))
        begin = end
    return ranges


def _backward_hook(grad_output, features, loss_obj, cache, ranges):
    last = (len(ranges) - 1, len(ranges[-1]) - 1)
    with torch.enable_grad():
        for col, (feature, column_grads, column_ranges) in enumerate(zip(features, cache, ranges)):
            for mb, grad_mb in enumerate(column_grads):
                sync = (col, mb) == last
                with nullcontext() if sync else loss_obj.model.no_sync():
                    reps_mb = loss_obj.embed_minibatch(feature, column_ranges[mb])
                    surrogate = torch.dot(reps_mb.flatten(), grad_mb.flatten()) * grad_output
                    surrogate.backward()


class CachedMultipleNegativesRankingLoss:
    def __init__(self, model, mini_batch_num_tokens, scale=20.0):
        self.model, self.mini_batch_num_tokens, self.scale = model, mini_batch_num_tokens, scale

    def embed_minibatch_iter(self, feature, with_grad, ranges):
        for begin, end in ranges:
            ids, mask = feature["input_ids"][begin:end], feature["attention_mask"][begin:end]
            if with_grad:
                yield self.model(ids, mask)
            else:
                with torch.no_grad():
                    yield self.model(ids, mask)

    def embed_minibatch(self, feature, mb_range):
        begin, end = mb_range
        return self.model(feature["input_ids"][begin:end], feature["attention_mask"][begin:end])

    def calculate_loss(self, reps):
        anchors, positives = torch.cat(reps[0]), torch.cat(reps[1])
        scores = anchors @ positives.T * self.scale
        return F.cross_entropy(scores, torch.arange(len(anchors)))

    def __call__(self, features):
        ranges = [_minibatch_ranges(f, self.mini_batch_num_tokens) for f in features]
        reps = [[r.detach().requires_grad_() for r in self.embed_minibatch_iter(f, False, rg)]
                for f, rg in zip(features, ranges)]
        loss = self.calculate_loss(reps)
        loss.backward()
        cache = [[r.grad for r in column] for column in reps]
        loss = loss.detach().requires_grad_()
        loss.register_hook(partial(_backward_hook, features=features, loss_obj=self, cache=cache, ranges=ranges))
        return loss


def pad(texts):
    width = max(len(t) for t in texts)
    ids = torch.tensor([t + [0] * (width - len(t)) for t in texts])
    return {"input_ids": ids, "attention_mask": (ids != 0).float()}


def make_batch(rank, step):
    gen = torch.Generator().manual_seed(100 * rank + step)
    lengths = [7, 6, 6, 5] if rank == 0 else [4, 4, 3, 3]
    anchors = [torch.randint(1, 50, (n,), generator=gen).tolist() for n in lengths]
    positives = [torch.randint(1, 50, (3,), generator=gen).tolist() for _ in lengths]
    return [pad(anchors), pad(positives)]


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(MeanPooledEncoder())
    loss_fn = CachedMultipleNegativesRankingLoss(model, mini_batch_num_tokens=12)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    total = 0.0
    for step in range(2):
        features = make_batch(rank, step)
        loss = loss_fn(features)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    mean = torch.tensor([total / 2])
    dist.all_reduce(mean)
    print(f"[rank {rank}] mini-batches {[len(_minibatch_ranges(f, 12)) for f in make_batch(rank, 0)]}, "
          f"mean loss {mean.item() / dist.get_world_size():.4f}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
