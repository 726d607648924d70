"""lm-evaluation-harness distributed evaluation: a rank whose document shard is empty raises "did not find any docs"
while the other ranks go on into the evaluator's collectives.

Source: EleutherAI/lm-evaluation-harness issue #3511 ("Distributed eval fails with ValueError: task.build_requests()
did not find any docs! when task has fewer examples than number of GPUs"), PRs #3746 and #3818; modelled on
``lm_eval/api/task.py`` ``Task.build_all_requests`` (``islice(docs, rank, limit, world_size)``, ``if
len(self._instances) == 0: raise ValueError``) and ``lm_eval/evaluator.py`` ``evaluate`` (gather of per-rank
instance counts for padding, ``gather_object`` of the results to rank 0, ``barrier``).

A subtask with 2 documents is evaluated on 3 ranks. Rank 2's strided shard is empty, so it raises; ranks 0 and 1
wait in the gather of instance counts for a rank that is gone.

BUG: the empty-task check fires on every rank, including ranks that merely received an empty shard.
"""

from itertools import islice

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 3
TIMEOUT = 15

DOCS = [{"query": "2 + 2 =", "choices": [" 3", " 4"], "gold": 1},
        {"query": "The sky is", "choices": [" blue", " green"], "gold": 0}]


class Task:
    def build_all_requests(self, rank, world_size):
        self._instances = []
        for doc_id, doc in islice(enumerate(DOCS), rank, None, world_size):
            for i, choice in enumerate(doc["choices"]):
                self._instances.append({"doc_id": doc_id, "idx": i, "context": doc["query"], "cont": choice})
        if len(self._instances) == 0:  # BUG
            raise ValueError("task.build_requests() did not find any docs!")


def loglikelihood(context, continuation):
    """Stand-in scorer: deterministic per (context, continuation)."""
    g = torch.Generator().manual_seed(sum(map(ord, context + continuation)))
    return -float(torch.rand(1, generator=g).item()) * len(continuation)


def evaluate(task, rank, world_size):
    task.build_all_requests(rank, world_size)
    counts = [torch.zeros(1, dtype=torch.long) for _ in range(world_size)]
    dist.all_gather(counts, torch.tensor([len(task._instances)]))  # WAITS
    numpad = max(int(c.item()) for c in counts) - len(task._instances)
    results = [(inst["doc_id"], inst["idx"], loglikelihood(inst["context"], inst["cont"])) for inst in task._instances]
    results += [results[-1]] * numpad if results else []
    gathered = [None] * world_size if rank == 0 else None
    dist.gather_object(results[:len(task._instances)], gathered, dst=0)
    dist.barrier()
    if rank == 0:
        scores = {}
        for doc_id, idx, ll in (r for part in gathered for r in part):
            scores.setdefault(doc_id, {})[idx] = ll
        acc = sum(max(s, key=s.get) == DOCS[d]["gold"] for d, s in scores.items()) / len(DOCS)
        return acc
    return None


def worker():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    acc = evaluate(Task(), rank, world_size)  # WAITS
    if rank == 0:
        print(f"[rank 0] acc = {acc:.2f}", flush=True)
    print(f"[rank {rank}] evaluation done", flush=True)


if __name__ == "__main__":
    from datetime import timedelta

    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
