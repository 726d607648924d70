"""Helper module of round 26 (not an item): a rule-based verifier and reward statistics shared by the data-parallel
ranks of an RL fine-tuning loop.

* :func:`verify` -- stands in for a math answer checker run under a time limit (math-verify's ``parse`` /
  ``verify`` behind ``signal.alarm``, as verl's ``reward_score/math_verify.py`` and AReaL's ``gsm8k_reward_fn``
  call it): the "parse time" grows with the length of the completion, and past ``TIME_LIMIT`` it raises
  :class:`VerifierTimeout` instead of answering.
* :class:`RunningRewardStats` -- running mean and variance of the rewards over every data-parallel rank (OpenRLHF's
  ``RunningMoments`` idea with the moments all-reduced): rewards are buffered and, every ``flush_every`` rewards,
  one ``all_reduce`` merges the ranks' counts, sums and sums of squares into the running moments.
"""

import math

import torch
import torch.distributed as dist

TIME_LIMIT = 2.0  # "seconds" of parse time
PARSE_COST = 0.01  # per character


class VerifierTimeout(Exception):
    pass


def verify(completion, answer):
    if len(completion) * PARSE_COST > TIME_LIMIT:
        raise VerifierTimeout(f"verification of a {len(completion)}-character completion timed out")
    return 1.0 if completion.rstrip().endswith(f"\\boxed{{{answer}}}") else 0.0


class RunningRewardStats:
    def __init__(self, flush_every, group=None):
        self.flush_every = flush_every
        self.group = group
        self.count = 0.0
        self.mean = 0.0
        self.m2 = 0.0
        self._pending = []

    def add(self, reward):
        self._pending.append(float(reward))
        if len(self._pending) == self.flush_every:
            self._flush()

    def _flush(self):
        t = torch.tensor([len(self._pending), sum(self._pending), sum(r * r for r in self._pending)],
                         dtype=torch.float64)
        dist.all_reduce(t, group=self.group)
        n, s, ss = t.tolist()
        batch_mean = s / n
        batch_m2 = ss - n * batch_mean * batch_mean
        delta = batch_mean - self.mean
        total = self.count + n
        self.mean += delta * n / total
        self.m2 += batch_m2 + delta * delta * self.count * n / total
        self.count = total
        self._pending.clear()

    @property
    def std(self):
        return math.sqrt(self.m2 / self.count) if self.count > 1 else 1.0

    def normalize(self, reward):
        return (reward - self.mean) / (self.std + 1e-6)
