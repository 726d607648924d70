"""tinker-cloud on Miles: a ``forward_backward`` whose sample count does not divide the DP width never returns.

Source: GMISWE/tinker-cloud PR #30 (2026, "miles: fix sub-DP forward_backward deadlock (reject, then pad)"). With
``ALLOW_PARTIAL_BATCHES`` set (on every pod), the server let a batch through whose sample count is not a multiple of
the data-parallel width. "Miles derives ``num_steps_per_rollout`` per rank from that rank's local sample count, so an
unbalanced split makes the ranks disagree on how many micro-steps to run and they block on the per-step gradient
collective": with 3 samples at dp=2 the log shows ``num_local_samples=2, num_steps_per_rollout=2`` on rank 0 and
``num_local_samples=1, num_steps_per_rollout=1`` on rank 1; both ranks finish ``compute_log_prob`` and neither
returns. The PR first rejects such batches, then pads them up to the DP width with inert samples whose outputs are
dropped.

What this item does: two data-parallel policy actors serve one ``forward_backward`` request of three RL samples
(prompt, response tokens, advantage). The request is split across the actors by sample; each actor computes the old
log-probabilities of its samples (forward only, no collective), then runs its training micro-steps -- a clipped
policy-gradient loss, backward, and the per-step gradient all-reduce -- and finally all-reduces the loss and token
counts for the response.

The bug: the number of micro-steps comes from the local sample count. Rank 0 (two samples) makes a second gradient
all-reduce while rank 1 (one sample) has gone on to the metrics all-reduce; the two collectives differ in size.
"""

from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15

VOCAB = 12
MICRO_BATCH_SIZE = 1
CLIP = 0.2


class BigramPolicy(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(VOCAB, 8)
        self.head = torch.nn.Linear(8, VOCAB)

    def logprobs(self, tokens: torch.Tensor) -> torch.Tensor:
        """Log-probability of tokens[1:] given the previous token."""
        logits = self.head(self.emb(tokens[:-1]))
        return torch.log_softmax(logits, -1).gather(-1, tokens[1:, None]).squeeze(-1)


def make_request():
    gen = torch.Generator().manual_seed(30)
    samples = []
    for i in range(3):
        tokens = torch.randint(0, VOCAB, (5 + i,), generator=gen)
        samples.append({"tokens": tokens, "prompt_len": 2, "advantage": float(i) - 1.0, "loss_weight": 1.0})
    return samples


def compute_log_prob(policy, samples):
    with torch.no_grad():
        return [policy.logprobs(s["tokens"]) for s in samples]


def micro_step(policy, opt, sample, old_logp) -> torch.Tensor:
    logp = policy.logprobs(sample["tokens"])[sample["prompt_len"] - 1 :]
    old = old_logp[sample["prompt_len"] - 1 :]
    ratio = (logp - old).exp()
    adv = sample["advantage"]
    loss = -torch.min(ratio * adv, ratio.clamp(1 - CLIP, 1 + CLIP) * adv).sum() * sample["loss_weight"]
    opt.zero_grad()
    loss.backward()
    flat = torch.cat([p.grad.reshape(-1) for p in policy.parameters()])
    dist.all_reduce(flat)  # WAITS
    flat /= dist.get_world_size()
    offset = 0
    for p in policy.parameters():
        p.grad.copy_(flat[offset : offset + p.numel()].view_as(p))
        offset += p.numel()
    opt.step()
    return torch.stack([loss.detach(), torch.tensor(float(logp.numel()) * sample["loss_weight"])])


def forward_backward(policy, opt, samples):
    rank, dp = dist.get_rank(), dist.get_world_size()
    local = samples[rank::dp]
    old_logps = compute_log_prob(policy, local)
    num_steps_per_rollout = len(local) // MICRO_BATCH_SIZE  # BUG
    print(f"rank {rank}: num_local_samples={len(local)}, num_steps_per_rollout={num_steps_per_rollout}", flush=True)
    totals = torch.zeros(2)
    for step in range(num_steps_per_rollout):
        totals += micro_step(policy, opt, local[step], old_logps[step])  # WAITS
    dist.all_reduce(totals)  # WAITS
    return {"loss": float(totals[0]), "tokens": int(totals[1])}


def worker() -> None:
    torch.manual_seed(0)
    policy = BigramPolicy()
    opt = torch.optim.SGD(policy.parameters(), lr=0.1)
    samples = make_request()  # 3 samples at dp=2, let through by ALLOW_PARTIAL_BATCHES
    result = forward_backward(policy, opt, samples)  # WAITS
    print(f"rank {dist.get_rank()}: forward_backward -> {result}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
