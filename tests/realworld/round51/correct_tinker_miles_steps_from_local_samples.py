"""tinker-cloud on Miles: a partial batch padded up to the DP width with inert samples before ``forward_backward``.

Source: GMISWE/tinker-cloud PR #30 (2026, "miles: fix sub-DP forward_backward deadlock (reject, then pad)"). Miles
derives ``num_steps_per_rollout`` on each rank from that rank's local sample count; a batch whose sample count does
not divide the data-parallel width (3 samples at dp=2) made the ranks run different numbers of micro-steps and block
on the per-step gradient collective. The PR's second commit (modelled here) pads the batch up to a multiple of the
DP width with inert samples -- a copy of a real sample with zero loss weight -- and drops their outputs from the
response.

What this item does: two data-parallel policy actors serve one ``forward_backward`` request of three RL samples,
padded to four. Each actor computes the old log-probabilities of its two samples (forward only), runs two training
micro-steps -- a clipped policy-gradient loss, backward, the per-step gradient all-reduce -- and all-reduces the loss
and token counts for the response; the pad contributes no loss, no gradient and no tokens. Both ranks make the
same collectives; exits 0.
"""

from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "correct"
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


def pad_to_dp(samples, dp):
    """Append inert copies (zero loss weight) until the sample count is a multiple of the DP width."""
    pads = [dict(samples[-1], loss_weight=0.0) for _ in range(-len(samples) % dp)]
    return samples + pads


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
    dist.all_reduce(flat)
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
    num_steps_per_rollout = len(local) // MICRO_BATCH_SIZE
    print(f"rank {rank}: num_local_samples={len(local)}, num_steps_per_rollout={num_steps_per_rollout}", flush=True)
    totals = torch.zeros(2)
    for step in range(num_steps_per_rollout):
        totals += micro_step(policy, opt, local[step], old_logps[step])
    dist.all_reduce(totals)
    return {"loss": float(totals[0]), "tokens": int(totals[1])}


def worker() -> None:
    torch.manual_seed(0)
    policy = BigramPolicy()
    opt = torch.optim.SGD(policy.parameters(), lr=0.1)
    samples = pad_to_dp(make_request(), dist.get_world_size())  # 3 samples at dp=2 -> 4
    result = forward_backward(policy, opt, samples)
    print(f"rank {dist.get_rank()}: forward_backward -> {result}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
