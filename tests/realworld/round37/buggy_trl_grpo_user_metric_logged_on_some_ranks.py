"""TRL (GRPOTrainer) -- a reward function logs a metric through ``log_metric`` on some ranks only; the flush gathers
one value per *local* key.

Source: huggingface/trl issue #7310 ("Distributed deadlock and metric corruption in GRPOTrainer and RLOOTrainer when
conditionally logging metrics/extra columns", with a two-process reproduction) and PR #7311 ("synchronize user log
keys across ranks", closed). Modelled on ``trl/trainer/grpo_trainer.py`` (July 2026): ``_log_metric`` appends to
``self._pending_metrics[name]``; ``_generate_and_score_completions`` gathers the prompt/completion texts with
``gather_object``, then ``for name in sorted(self._pending_metrics): ... self.accelerator.gather(torch.tensor(
local_mean))`` and clears the dict; the policy loss is then backpropagated through the DDP-wrapped model.

What it does: two GRPO steps. Each rank generates completions for its prompts (a fixed stand-in generator), scores
them with a format reward that calls ``log_metric("format/strict_match", ...)`` only when a completion carries the
``<answer>`` tag -- as a user's reward function does for the samples it can judge -- and trains on the advantages.

The bug (as the issue's reproduction shows): the flush iterates over the keys this rank logged. In step 1 rank 0's
completions have the tag and rank 1's have none, so rank 0 enters ``accelerator.gather`` for the metric while rank 1
goes on to the loss backward and its DDP all-reduce.
"""

from collections import defaultdict
from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15

COMPLETIONS = {  # (step, rank) -> what the stand-in policy generates for that rank's prompts
    (1, 0): ["<answer>4</answer>", "the sum is 4"],
    (1, 1): ["I think 9", "nine"],
    (2, 0): ["<answer>7</answer>", "<answer>8</answer>"],
    (2, 1): ["<answer>3</answer>", "so <answer>3"],
}


def gather(tensor):
    """accelerate's gather of a 0-d tensor: all_gather of tensor[None] into a (world,) tensor."""
    tensor = tensor.reshape(1)
    out = [torch.empty_like(tensor) for _ in range(dist.get_world_size())]
    dist.all_gather(out, tensor)  # WAITS
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
        for name in sorted(self._pending_metrics):  # BUG
            values = self._pending_metrics[name]
            local_mean = sum(values) / len(values)
            global_mean = gather(torch.tensor(local_mean)).mean().item()  # WAITS
            self._metrics[name].append(global_mean)
        self._pending_metrics.clear()
        return {"prompt_ids": torch.tensor([len(p) for p in prompts], dtype=torch.float32), "advantages": advantages}

    def training_step(self, inputs):
        logits = self.model(inputs["prompt_ids"].unsqueeze(-1)).squeeze(-1)
        loss = -(torch.log_softmax(logits, dim=0) * inputs["advantages"]).sum()
        self.optimizer.zero_grad()
        loss.backward()  # WAITS
        self.optimizer.step()
        return loss.detach()

    def train(self, steps):
        rank = dist.get_rank()
        for step in range(1, steps + 1):
            inputs = self._generate_and_score_completions(step, rank)  # WAITS
            self.training_step(inputs)  # WAITS


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
    trainer.train(steps=2)  # WAITS
    print(f"[rank {dist.get_rank()}] metrics: {dict(trainer._metrics)}; {len(trainer._logs['completion'])} completions")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
