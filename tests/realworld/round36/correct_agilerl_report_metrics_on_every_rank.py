"""AgileRL's LLM training loop after PR #586: ``population.report_metrics()`` runs on every rank (the W&B logger waits
for everyone and gathers), and only the console logger restricts itself to the main process -- the PR's fix.

Models: AgileRL/AgileRL PR #586 ("Bugfix/cispo norm cross rank hang": "Distributed runs were hanging after the first
learn/metrics step because ranks issued different collective sequences ... Main-process-only `report_metrics()`:
`WandbLogger` / `Logger.on_main_process` issue `wait_for_everyone()` barriers (and gathers) that every rank must hit.
Calling `population.report_metrics()` only on the main process desynced NCCL right after the first metrics table. All
four LLM training loops now call `report_metrics` on every rank; `StdOutLogger` takes the accelerator and prints only
on the main process"). Code modelled (written here, not copied, from the PR's description and the loops it names):
the LLM training loop (each agent's ``learn`` on its batch, metrics reported every ``report_every`` steps), the
population's ``report_metrics`` fanning the aggregated metrics out to its loggers, a ``WandbLogger`` that waits for
everyone, gathers every rank's metrics and writes them on the main process, a ``StdOutLogger`` printing the table.
Stand-ins: accelerate's ``Accelerator`` (``is_main_process``, ``wait_for_everyone``, ``gather_object``, gradient
all-reduce in ``backward``), a tiny policy whose learn step is a REINFORCE-style update on fixed rewards, a
list in place of the W&B run.

At steps 2 and 4 both ranks report: they meet in ``wait_for_everyone`` and the gather, rank 0 writes a row and
prints the table. 2 ranks.
"""

import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15


class Accelerator:
    @property
    def is_main_process(self):
        return dist.get_rank() == 0

    def wait_for_everyone(self):
        dist.barrier()

    def gather_object(self, obj):
        out = [None] * dist.get_world_size()
        dist.all_gather_object(out, obj)
        return out

    def backward(self, loss, module):
        loss.backward()
        for p in module.parameters():
            dist.all_reduce(p.grad)
            p.grad /= dist.get_world_size()


class WandbLogger:
    def __init__(self, accelerator):
        self.accelerator = accelerator
        self.run = []

    def write(self, step, metrics):
        self.accelerator.wait_for_everyone()
        all_metrics = self.accelerator.gather_object(metrics)
        if self.accelerator.is_main_process:
            self.run.append({"step": step, **{k: sum(m[k] for m in all_metrics) / len(all_metrics) for k in metrics}})


class StdOutLogger:
    def __init__(self, accelerator):
        self.accelerator = accelerator

    def write(self, step, metrics):
        if self.accelerator.is_main_process:
            print(f"step {step}: " + ", ".join(f"{k} {v:.4f}" for k, v in metrics.items()), flush=True)


class Agent:
    def __init__(self, index, accelerator):
        torch.manual_seed(index)
        self.policy = nn.Linear(6, 4)
        self.optimizer = torch.optim.Adam(self.policy.parameters(), lr=1e-2)
        self.accelerator = accelerator
        self.metrics = {}

    def learn(self, states, actions, rewards):
        logp = F.log_softmax(self.policy(states), dim=-1).gather(1, actions[:, None]).squeeze(1)
        advantages = rewards - rewards.mean()
        loss = -(logp * advantages).mean()
        self.optimizer.zero_grad()
        self.accelerator.backward(loss, self.policy)
        self.optimizer.step()
        self.metrics = {"loss": loss.item(), "mean_reward": rewards.mean().item()}


class Population:
    def __init__(self, agents, loggers):
        self.agents, self.loggers = agents, loggers

    def report_metrics(self, step):
        metrics = {}
        for i, agent in enumerate(self.agents):
            for k, v in agent.metrics.items():
                metrics[f"agent_{i}/{k}"] = v
        for logger in self.loggers:
            logger.write(step, metrics)


def finetune_llm(population, accelerator, batches, report_every=2):
    for step, (states, actions, rewards) in enumerate(batches, start=1):
        for agent in population.agents:
            agent.learn(states, actions, rewards)
        if step % report_every == 0:
            population.report_metrics(step)  # every rank: the loggers wait for everyone
    return step


def worker():
    rank = dist.get_rank()
    accelerator = Accelerator()
    gen = torch.Generator().manual_seed(70 + rank)
    batches = [(torch.randn(8, 6, generator=gen), torch.randint(0, 4, (8,), generator=gen),
                torch.rand(8, generator=gen)) for _ in range(4)]
    wandb_logger = WandbLogger(accelerator)
    population = Population([Agent(0, accelerator), Agent(1, accelerator)], [wandb_logger, StdOutLogger(accelerator)])
    steps = finetune_llm(population, accelerator, batches)
    print(f"[rank {rank}] {steps} steps, {len(wandb_logger.run)} metric rows logged", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
