"""exo (fixed): tensor-parallel ranks queue the agreed tasks in the agreed, sorted order.

Source: exo-explore/exo PR #2048 ("fix(inference): prevent TP collective deadlock via agree_on_tasks order"),
the worker's task agreement (`agree_on_tasks` / `mx_all_gather_tasks`) in the MLX engine runner. Two requests sent
at the same time reach the two machines in different orders. Every rank all-gathers the task ids it has seen and
keeps the ones all ranks have; `mx_all_gather_tasks` returns that set sorted by task id, but the queue was extended
by filtering the rank's own `_maybe_queue`, which keeps the per-rank arrival order. Rank 0 then runs task A's
prefill collective while rank 1 runs task B's: "the next collective on rank 0 corresponded to a different task than
on rank 1" -- a crash or a permanent deadlock.

exo uses MLX's distributed backend; here the same steps run on torch.distributed (gloo): the agreement is an
`all_gather_object`, each task's prefill one `all_reduce` over its prompt's hidden states (task A 5 tokens, task B
3 tokens). This is the fix the PR gives: the queue is extended with the agreed list, sorted by task id, so every
rank runs task A's prefill and then task B's.
"""

import datetime

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

PROMPT_TOKENS = {"task-a": 5, "task-b": 3}
HIDDEN = 4


class Runner:
    def __init__(self, rank: int):
        self.rank = rank
        self.maybe_queue: list[str] = []
        self.queue: list[str] = []

    def receive(self, task_id: str) -> None:
        self.maybe_queue.append(task_id)

    def agree_on_tasks(self) -> None:
        seen = [None] * dist.get_world_size()
        dist.all_gather_object(seen, sorted(self.maybe_queue))
        agreed = sorted(set.intersection(*(set(s) for s in seen)))
        self.queue.extend(agreed)
        self.maybe_queue = [t for t in self.maybe_queue if t not in agreed]

    def prefill(self, task_id: str) -> float:
        hidden = torch.full((PROMPT_TOKENS[task_id], HIDDEN), float(self.rank + 1))
        dist.all_reduce(hidden)
        return float(hidden.sum())

    def run(self) -> list[tuple[str, float]]:
        done = []
        while self.queue:
            task_id = self.queue.pop(0)
            done.append((task_id, self.prefill(task_id)))
        return done


def worker():
    rank = dist.get_rank()
    runner = Runner(rank)
    # the API server sends both requests at once; they reach the two machines in different orders
    arrivals = ["task-a", "task-b"] if rank == 0 else ["task-b", "task-a"]
    for task_id in arrivals:
        runner.receive(task_id)
    runner.agree_on_tasks()
    results = runner.run()
    print(f"[rank {rank}] served {results}")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
