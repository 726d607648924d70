"""lmms-eval: a rank that receives no documents after task sharding raises while the others gather.

Source: EvolvingLMMs-Lab/lmms-eval PR #1233 ("fix distributed evaluation on empty task shards", 2026-03): "Fix
distributed evaluation when a rank receives zero documents after task sharding. Keep request construction and
synchronization aligned by injecting a padding request for empty shards" -- without it "distributed runs with
empty shards [...] diverg[e] or hang". Modelled on ``lmms_eval/api/task.py`` (``Task.build_all_requests``: the
rank's documents are ``islice(docs, rank, limit, world_size)``, and it ends with ``if len(self._instances) == 0:
raise ValueError("task.build_requests() did not find any docs!")``) and ``lmms_eval/evaluator.py``
(``evaluate``: every rank gathers its instance count to compute padding, runs the requests, and the per-rank
results are gathered with ``all_gather_object`` for rank 0 to aggregate).

Bug: ``--limit 2`` on 3 ranks gives rank 2 no document; its ``build_all_requests`` raises while ranks 0 and 1 wait
in the instance-count gather.
"""

import datetime
from itertools import islice

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 3
TIMEOUT = 15

DOCS = [{"question": f"What is {i} + {i}?", "answer": str(2 * i), "image": f"img_{i}.png"} for i in range(10)]
LIMIT = 2


class Instance:
    def __init__(self, doc_id, arguments, padding=False):
        self.doc_id, self.arguments, self.padding = doc_id, arguments, padding
        self.resps = []


class Task:
    def __init__(self, docs):
        self.docs = docs
        self._instances = []

    def construct_requests(self, doc_id, ctx):
        return Instance(doc_id, (ctx, {"max_new_tokens": 4}, self.docs[doc_id]["image"]))

    def build_all_requests(self, rank, world_size, limit):
        instances = []
        for doc_id, doc in islice(enumerate(self.docs), rank, limit, world_size):
            instances.append(self.construct_requests(doc_id, doc["question"]))
        self._instances = instances
        if len(self._instances) == 0:
            raise ValueError("task.build_requests() did not find any docs!")  # BUG

    def process_results(self, doc_id, resp):
        return {"exact_match": float(resp == self.docs[doc_id]["answer"])}


def generate_until(requests):
    """A tiny 'model': answers by evaluating the question's sum."""
    out = []
    for req in requests:
        a = int(req.arguments[0].split()[2])
        out.append(str(a + a))
    return out


def gather_instance_counts(n):
    counts = [torch.zeros(1, dtype=torch.long) for _ in range(dist.get_world_size())]
    dist.all_gather(counts, torch.tensor([n]))  # WAITS
    return [int(c.item()) for c in counts]


def evaluate(task):
    rank, world = dist.get_rank(), dist.get_world_size()
    task.build_all_requests(rank, world, LIMIT)
    counts = gather_instance_counts(len(task._instances))  # WAITS
    numpad = max(counts) - counts[rank]
    requests = task._instances + [task._instances[-1]] * numpad  # padded requests: same number everywhere
    resps = generate_until(requests)
    results = [task.process_results(r.doc_id, out) for r, out in zip(task._instances, resps) if not r.padding]
    gathered = [None] * world
    dist.all_gather_object(gathered, results)
    if rank == 0:
        flat = [r["exact_match"] for part in gathered for r in part]
        print(f"rank 0: exact_match {sum(flat) / len(flat):.3f} over {len(flat)} docs", flush=True)
    dist.barrier()


def worker():
    task = Task(DOCS)
    evaluate(task)  # WAITS
    print(f"rank {dist.get_rank()}: evaluation finished", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
