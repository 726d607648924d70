"""TRL (GRPOTrainer) -- user-logged metric keys synchronised across ranks before the flush gathers them (PR #7311).

Source: huggingface/trl issue #7310 ("Distributed deadlock and metric corruption in GRPOTrainer and RLOOTrainer when
conditionally logging metrics/extra columns", with a two-process reproduction) and PR #7311 ("synchronize user log
keys across ranks", closed). Modelled on ``trl/trainer/grpo_trainer.py`` (July 2026): ``_log_metric`` appends to
``self._pending_metrics[name]``; ``_generate_and_score_completions`` gathers the prompt/completion texts with
``gather_object``, then ``for name in sorted(self._pending_metrics): ... self.accelerator.gather(torch.tensor(
local_mean))`` and clears the dict; the policy loss is then backpropagated through the DDP-wrapped model.

What it does: two GRPO steps. Each rank generates completions for its prompts (a fixed stand-in generator), scores
them with a format reward that calls ``log_metric("format/strict_match", ...)`` only when a completion carries the
``<answer>`` tag -- as a user's reward function does for the samples it can judge -- and trains on the advantages.

The fix (PR #7311): before the loop the ranks exchange their metric names with ``gather_object`` and all iterate over
the sorted union; a rank that did not record a metric contributes ``[0.0, 0.0]`` (sum and count), so it takes part in
the collective without skewing the weighted mean.
"""

from collections import defaultdict
from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

COMPLETIONS = {  # (step, rank) -> what the stand-in policy generates for that rank's prompts
    (1, 0): ["<answer>4</answer>", "the sum is 4"],
    (1, 1): ["I think 9", "nine"],
    (2, 0): ["<answer>7</answer>", "<answer>8</answer>"],
    (2, 1): ["<answer>3</answer>", "so <answer>3"],
}


def gather(tensor):
    """accelerate's gather: all_gather along the first dimension (a 0-d tensor is gathered as tensor[None])."""
    tensor = tensor.reshape(-1)
    out = [torch.empty_like(tensor) for _ in range(dist.get_world_size())]
    dist.all_gather(out, tensor)
    return torch.cat(out)


def gather_object(obj):
    out = [None] * dist.get_world_size()
    dist.all_gather_object(out, obj)
    return [x for part in out for x in part]


class GRPOTrainer:
    def __init__(self, model, reward_funcs):
        self.model = DDP(model)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.05)
        self.reward_funcs = reward_funcs
        self._pending_metrics = defaultdict(list)
        self._metrics = defaultdict(list)
        self._logs = defaultdict(list)

    def _log_metric(self, name, value):
        self._pending_metrics[name].append(value)

    def _generate_and_score_completions(self, step, rank):
        prompts = [f"q{step}.{rank}.{i}" for i in range(2)]
        completions = COMPLETIONS[(step, rank)]
        rewards = torch.zeros(len(prompts))
        for func in self.reward_funcs:
            rewards += torch.tensor(func(completions, log_metric=self._log_metric), dtype=torch.float32)
        advantages = rewards - rewards.mean()

        self._logs["prompt"].extend(gather_object(prompts))
        self._logs["completion"].extend(gather_object(completions))
        # Flush user-logged metrics (from log_metric), averaging across processes.
        # Keys are synchronised across ranks so every rank calls gather for every metric, in the same order.
        all_names = sorted(set(gather_object(list(self._pending_metrics))))
        for name in all_names:
            values = self._pending_metrics.get(name, [])
            local = torch.tensor([float(sum(values)), float(len(values))])  # [0.0, 0.0] if not logged here
            totals = gather(local).reshape(-1, 2).sum(dim=0)
            self._metrics[name].append((totals[0] / totals[1]).item())
        self._pending_metrics.clear()
        return {"prompt_ids": torch.tensor([len(p) for p in prompts], dtype=torch.float32), "advantages": advantages}

    def training_step(self, inputs):
        logits = self.model(inputs["prompt_ids"].unsqueeze(-1)).squeeze(-1)
        loss = -(torch.log_softmax(logits, dim=0) * inputs["advantages"]).sum()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.detach()

    def train(self, steps):
        rank = dist.get_rank()
        for step in range(1, steps + 1):
            inputs = self._generate_and_score_completions(step, rank)
            self.training_step(inputs)


def strict_format_reward(completions, log_metric=None, **kwargs):
    rewards, judged = [], []
    for text in completions:
        ok = text.startswith("<answer>") and text.endswith("</answer>")
        rewards.append(1.0 if ok else 0.0)
        if "<answer>" in text:
            judged.append(ok)
    if judged and log_metric is not None:  # only samples the reward could judge
        log_metric("format/strict_match", sum(judged) / len(judged))
    return rewards


def worker():
    torch.manual_seed(0)
    trainer = GRPOTrainer(nn.Linear(1, 1), [strict_format_reward])
    trainer.train(steps=2)
    print(f"[rank {dist.get_rank()}] metrics: {dict(trainer._metrics)}; {len(trainer._logs['completion'])} completions")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
