"""Compose-RL: reward results are awaited with a timeout; a stuck reward becomes a zero reward (the fix).

Source: databricks/compose-rl PR #87 ("Fix reward timeouts", 2025-06), reverted by PR #104 and fixed again by
PR #146 (2025-08); modelled on ``compose_rl/algorithms/online/reward_manager.py`` (``RewardManager.__call__``
submits each function reward to ``self.pool.apply_async``; ``resolve_outputs`` waits on every ``AsyncResult``)
and the on-policy callback, which then normalises rewards with a world all-reduce
(``dist_compute_masked_mean_and_var``). The PR: "reward computation was susceptible to hanging and then
eventually timing out the run on the next distributed call".

Correct twin (PR #146's ``resolve_outputs``): ``subreward.get(timeout=BLOCKING_TIMEOUT)``; on a timeout the
reward is logged and replaced by zeros, and the pool is terminated and recreated so the stuck worker does not
leak. Rank 1 waits 2 s for its degenerate sample, then joins the all-reduce. (A thread pool stands in for the PR's
spawn-context process pool: same ``apply_async`` / ``AsyncResult.get`` API.)
"""

import datetime
import time
from multiprocessing import TimeoutError as PoolTimeoutError
from multiprocessing.pool import ThreadPool

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

STUCK_SECONDS = 120.0  # the verifier on the degenerate sample: effectively for ever
BLOCKING_TIMEOUT = 2.0  # Reward.BLOCKING_TIMEOUT


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

    def resolve_outputs(self, reward_output, reward_lengths):
        resolved = {}
        encountered_timeout = False
        for name, subreward in reward_output.items():
            try:
                resolved[name] = subreward.get(timeout=BLOCKING_TIMEOUT)
            except PoolTimeoutError:
                encountered_timeout = True
                print(f"rank {dist.get_rank()}: timeout while waiting for {name} reward; using a default reward of 0",
                      flush=True)
                resolved[name] = torch.zeros(reward_lengths[name])
        if encountered_timeout:
            self.pool.terminate()
            self.pool = ThreadPool(processes=1)
        return resolved


def masked_mean_and_var(rewards):
    stats = torch.tensor([rewards.sum().item(), (rewards ** 2).sum().item(), float(rewards.numel())])
    dist.all_reduce(stats)
    mean = stats[0] / stats[2]
    return mean, stats[1] / stats[2] - mean ** 2


def worker():
    rank = dist.get_rank()
    manager = RewardManager()
    responses = ["the answer is 42", "I think 41"]
    if rank == 1:
        responses.append("so " * 150 + "and so on")  # a degenerate rollout
    outputs = manager(responses)
    rewards = manager.resolve_outputs(outputs, {"math_verifier": len(responses)})["math_verifier"]
    mean, var = masked_mean_and_var(rewards)
    print(f"rank {rank}: reward mean {mean.item():.3f} var {var.item():.3f}", flush=True)
    manager.pool.terminate()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
