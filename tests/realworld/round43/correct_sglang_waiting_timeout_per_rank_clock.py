"""SGLang, fixed: with tensor parallelism and request timeouts, TP rank 0 decides which waiting requests have timed
out and broadcasts their ids, so every rank aborts the same requests and runs the same batch.

Source: sgl-project/sglang PR #27164, "[Scheduler] Fix TP rank-divergence deadlock in abort-on-timeout" (June 2026,
fixes issue #27221): "`_abort_on_waiting_timeout` / `_abort_on_running_timeout` decided which requests to abort using
each rank's own `time.perf_counter()` and mutated `waiting_queue` / `running_batch` locally with no cross-rank sync
... a request whose wait/run straddles the deadline is aborted on some ranks but not others -> divergent batch
composition at the same forward step -> NCCL collective shape mismatch -> permanent TP deadlock." The fix: "one rank
decides and broadcasts the rid list so every rank aborts the same set." Modelled on
`python/sglang/srt/managers/scheduler.py` (`recv_requests` broadcasting the new requests to the TP group,
`_abort_on_waiting_timeout` with `SGLANG_REQ_WAITING_TIMEOUT`, `get_next_batch_to_run`, `run_batch`) and the
row-parallel all-reduce of a TP forward.

What it does: two TP ranks serve three requests with at most two running at a time; every forward all-reduces the
partial hidden states of the running batch. Rank 0 receives the requests and broadcasts them; each rank stamps a
request's queue-entry time when it has processed it. Rank 1 spends 1 s more in that processing (its copy of the
request's multimodal preprocessing), so its stamps are 1 s later. The waiting timeout is 1 s.

The fix (the PR): the source rank computes the timed-out rids on its clock and broadcasts the list over the TP group;
every rank removes exactly those requests. At the iteration where request 1 has finished, all ranks abort request 3
(rank 0 measured 1.3 s) and both forward a one-request batch.
"""

import datetime
import time

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

WAITING_TIMEOUT = 1.0
MAX_RUNNING = 2
HIDDEN = 8
PREPROCESS_SECONDS = {0: 0.0, 1: 1.0}
FORWARD_SECONDS = 0.3


class Req:
    def __init__(self, rid, prompt, max_new_tokens):
        self.rid, self.prompt, self.max_new_tokens = rid, prompt, max_new_tokens
        self.output = []
        self.entry_time = None
        self.finished_reason = None


class Scheduler:
    def __init__(self, tp_rank, tp_group):
        self.tp_rank, self.tp_group = tp_rank, tp_group
        self.waiting_queue, self.running = [], []
        self.finished = []
        torch.manual_seed(0)
        self.weight = torch.randn(HIDDEN, HIDDEN) / HIDDEN ** 0.5

    def recv_requests(self, incoming):
        reqs = [incoming if self.tp_rank == 0 else None]
        dist.broadcast_object_list(reqs, src=0, group=self.tp_group)
        time.sleep(PREPROCESS_SECONDS[self.tp_rank])  # per-rank input processing
        for req in reqs[0]:
            req.entry_time = time.perf_counter()
            self.waiting_queue.append(req)

    def _abort_on_waiting_timeout(self):
        decision = [None]
        if self.tp_rank == 0:
            now = time.perf_counter()
            decision[0] = {req.rid: now - req.entry_time for req in self.waiting_queue
                           if now - req.entry_time > WAITING_TIMEOUT}
        dist.broadcast_object_list(decision, src=0, group=self.tp_group)
        for req in list(self.waiting_queue):
            if req.rid in decision[0]:
                self.waiting_queue.remove(req)
                req.finished_reason = f"abort: waited {decision[0][req.rid]:.2f}s"
                self.finished.append(req)

    def get_next_batch_to_run(self):
        while self.waiting_queue and len(self.running) < MAX_RUNNING:
            self.running.append(self.waiting_queue.pop(0))
        return list(self.running)

    def run_batch(self, batch):
        hidden = torch.stack([torch.full((HIDDEN,), float(req.prompt + len(req.output))) for req in batch])
        partial = hidden @ self.weight / dist.get_world_size(self.tp_group)
        time.sleep(FORWARD_SECONDS)
        dist.all_reduce(partial, group=self.tp_group)
        return partial.argmax(dim=-1).tolist()

    def process_batch_result(self, batch, next_tokens):
        for req, token in zip(batch, next_tokens):
            req.output.append(token)
            if len(req.output) >= req.max_new_tokens:
                req.finished_reason = "length"
                self.running.remove(req)
                self.finished.append(req)

    def event_loop(self, incoming):
        self.recv_requests(incoming)
        iteration = 0
        while self.waiting_queue or self.running:
            self._abort_on_waiting_timeout()
            batch = self.get_next_batch_to_run()
            if not batch:
                continue
            print(f"[tp {self.tp_rank}] iteration {iteration}: batch {[r.rid for r in batch]}", flush=True)
            next_tokens = self.run_batch(batch)
            self.process_batch_result(batch, next_tokens)
            iteration += 1


def worker():
    rank = dist.get_rank()
    tp_group = dist.new_group(ranks=list(range(dist.get_world_size())),
                              timeout=datetime.timedelta(seconds=TIMEOUT))
    scheduler = Scheduler(rank, tp_group)
    incoming = [Req("req-1", 3, 1), Req("req-2", 5, 3), Req("req-3", 7, 2)] if rank == 0 else None
    scheduler.event_loop(incoming)
    summary = sorted((r.rid, r.finished_reason, r.output) for r in scheduler.finished)
    gathered = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, summary, group=tp_group)
    if rank == 0:
        print(f"all TP ranks agree: {all(g == summary for g in gathered)}; {summary}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
