"""Compose-RL: a reward worker stuck on one degenerate response stalls its rank's ``resolve_outputs``.

Source: databricks/compose-rl PR #87 ("Fix reward timeouts", 2025-06), reverted by PR #104 and fixed again by
PR #146 (2025-08); modelled on ``compose_rl/algorithms/online/reward_manager.py`` (``RewardManager.__call__``
submits each function reward to ``self.pool.apply_async``; ``resolve_outputs`` waits on every ``AsyncResult``)
and the on-policy callback, which then normalises rewards with a world all-reduce
(``dist_compute_masked_mean_and_var``). The PR: "reward computation was susceptible to hanging and then
eventually timing out the run on the next distributed call".

Bug: ``resolve_outputs`` calls ``AsyncResult.get()`` with no timeout. Rank 1's rollout contains a degenerate,
very long response on which the verifier never finishes, so rank 1 waits in ``get()`` for ever while rank 0 waits
in the reward-normalisation all-reduce until the group timeout. (A thread pool stands in for the PR's
spawn-context process pool: same ``apply_async`` / ``AsyncResult.get`` API.)
"""

import datetime
import time
from multiprocessing.pool import ThreadPool

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15

STUCK_SECONDS = 120.0  # the verifier on the degenerate sample: effectively for ever


def math_verifier(responses):
    """A rule-based reward: 1.0 when the response ends with the answer, slow on a degenerate response."""
    scores = []
    for text in responses:
        if len(text) > 200:  # long, degenerate generation: the normaliser backtracks for minutes
            deadline = time.monotonic() + STUCK_SECONDS
            while time.monotonic() < deadline:
                time.sleep(0.05)
        scores.append(1.0 if text.endswith("42") else 0.0)
    return torch.tensor(scores)


class RewardManager:
    def __init__(self):
        self.pool = ThreadPool(processes=1)

    def __call__(self, responses):
        return {"math_verifier": self.pool.apply_async(math_verifier, (responses,))}

    def resolve_outputs(self, reward_output):
        resolved = {}
        for name, subreward in reward_output.items():
            resolved[name] = subreward.get()  # BUG # WAITS
        return resolved


def masked_mean_and_var(rewards):
    stats = torch.tensor([rewards.sum().item(), (rewards ** 2).sum().item(), float(rewards.numel())])
    dist.all_reduce(stats)  # WAITS
    mean = stats[0] / stats[2]
    return mean, stats[1] / stats[2] - mean ** 2


def worker():
    rank = dist.get_rank()
    manager = RewardManager()
    responses = ["the answer is 42", "I think 41"]
    if rank == 1:
        responses.append("so " * 150 + "and so on")  # a degenerate rollout
    outputs = manager(responses)
    rewards = manager.resolve_outputs(outputs)["math_verifier"]  # WAITS
    mean, var = masked_mean_and_var(rewards)  # WAITS
    print(f"rank {rank}: reward mean {mean.item():.3f} var {var.item():.3f}", flush=True)
    manager.pool.terminate()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
