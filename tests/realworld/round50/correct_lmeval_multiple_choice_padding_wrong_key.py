"""Modelled on EleutherAI/lm-evaluation-harness issue #951 ("request pad not work as intended and potential
solution"; ``lm_eval/evaluator.py`` ``evaluate``, the 2023 code that pads each rank's requests so that "FSDP/DDP
require even batches among ranks"; PR #1520 closed the issue).

What the code does: a model evaluated under DeepSpeed ZeRO-3 style sharding -- each rank keeps a shard of every
weight and every forward first all-gathers the full weights -- runs a two-choice multiple-choice task. Each rank
builds the requests of its share of the documents (``docs[rank::world_size]``, one loglikelihood request per
choice), the ranks all-gather their instance counts, and each rank adds ``max - own`` padding requests so that all
ranks run the same number of batches. Requests are grouped by LM method: a ``multiple_choice`` task is scored
through ``loglikelihood``. The LM scores its requests in batches of two; after each request type every rank waits
for the others, and the accuracy is gathered to rank 0 (padding responses are never read).

The correct version of ``buggy_lmeval_multiple_choice_padding_wrong_key``, with the change the issue proposes: the
padding is recorded under the request type it is looked up by (``padding_requests[reqtype] += numpad``), so rank 1
adds two padding requests and both ranks run three batches.
"""

import collections
import datetime

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

HIDDEN = 8
VOCAB = 20
BATCH_SIZE = 2


class Instance:
    def __init__(self, request_type, doc_id, choice, args):
        self.request_type = request_type
        self.doc_id = doc_id
        self.choice = choice
        self.args = args
        self.repeats = 1
        self.resps = []


class MultipleChoiceTask:
    OUTPUT_TYPE = "multiple_choice"

    def __init__(self, docs):
        self.docs = docs
        self._instances = []

    def build_all_requests(self, rank, world_size):
        for doc_id in range(rank, len(self.docs), world_size):
            context, choices, _ = self.docs[doc_id]
            for i, choice in enumerate(choices):
                self._instances.append(Instance("loglikelihood", doc_id, i, (context, choice)))

    @property
    def instances(self):
        return self._instances


class ShardedLM:
    """A scorer whose weights are sharded like ZeRO-3: every forward all-gathers them first."""

    def __init__(self, rank, world_size):
        self.rank, self.world_size = rank, world_size
        full = torch.randn(VOCAB, HIDDEN, generator=torch.Generator().manual_seed(11))
        self.shard = full.chunk(world_size)[rank].contiguous()

    def _gather_params(self):
        parts = [torch.empty_like(self.shard) for _ in range(self.world_size)]
        dist.all_gather(parts, self.shard)
        return torch.cat(parts)

    def _forward(self, batch):
        weight = self._gather_params()
        scores = []
        for context, continuation in batch:
            ctx = weight[torch.tensor(context)].mean(dim=0)
            scores.append(torch.log_softmax(weight @ ctx, dim=0)[torch.tensor(continuation)].sum().item())
        return scores

    def loglikelihood(self, requests):
        out = []
        for start in range(0, len(requests), BATCH_SIZE):
            out += self._forward([r.args for r in requests[start : start + BATCH_SIZE]])
        return out

    def gather(self, value):
        t = torch.tensor([value])
        parts = [torch.zeros_like(t) for _ in range(self.world_size)]
        dist.all_gather(parts, t)
        return [int(p.item()) for p in parts]

    def wait_for_everyone(self):
        dist.barrier()


def evaluate(lm, tasks):
    requests = collections.defaultdict(list)
    padding_requests = collections.defaultdict(int)
    for task in tasks:
        task.build_all_requests(rank=lm.rank, world_size=lm.world_size)
        reqtype = "loglikelihood" if task.OUTPUT_TYPE == "multiple_choice" else task.OUTPUT_TYPE
        requests[reqtype].extend(task.instances)
        if lm.world_size > 1:
            gathered_item = lm.gather(len(task._instances))
            # compute number of pseudobatches to pad with (FSDP/DDP require even batches among ranks)
            numpad = max(gathered_item) - gathered_item[lm.rank]
            padding_requests[reqtype] += numpad

    for reqtype, reqs in requests.items():
        cloned_reqs = []
        for req in reqs:
            cloned_reqs.extend([req] * req.repeats)
        if (lm.world_size > 1) and (padding_requests[reqtype] > 0):
            for _ in range(padding_requests[reqtype]):
                cloned_reqs.extend([req] * req.repeats)
        resps = getattr(lm, reqtype)(cloned_reqs)
        for x, req in zip(resps, cloned_reqs):
            req.resps.append(x)
        if lm.world_size > 1:
            lm.wait_for_everyone()

    results = []
    for task in tasks:
        by_doc = collections.defaultdict(dict)
        for inst in task.instances:
            by_doc[inst.doc_id][inst.choice] = inst.resps[0]
        for doc_id, scores in by_doc.items():
            results.append(int(max(scores, key=scores.get) == task.docs[doc_id][2]))
    gathered = [None] * lm.world_size
    dist.all_gather_object(gathered, results)
    return sum(map(sum, gathered)), sum(map(len, gathered))


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    gen = torch.Generator().manual_seed(5)
    docs = []
    for _ in range(5):
        context = torch.randint(0, VOCAB, (4,), generator=gen).tolist()
        choices = [torch.randint(0, VOCAB, (2,), generator=gen).tolist() for _ in range(2)]
        docs.append((context, choices, int(torch.randint(0, 2, (1,), generator=gen))))
    correct, total = evaluate(ShardedLM(rank, world), [MultipleChoiceTask(docs)])
    if rank == 0:
        print(f"acc {correct}/{total}", flush=True)
    print(f"rank {rank}: evaluation finished", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
