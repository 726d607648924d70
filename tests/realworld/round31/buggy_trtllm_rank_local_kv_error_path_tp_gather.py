"""TensorRT-LLM's PyExecutor under attention-DP: a rank-local KV-transfer error sends one rank into ``tp_gather``.

Models: NVIDIA/TensorRT-LLM PR #13902 ("Sync disagg KV transfer error handling under ADP across all executor
loops"): "With ADP enabled in disaggregated serving, a NIXL/UCX KV transfer failure is rank-local: only the failing
DP rank sees ``DISAGG_TRANS_ERROR`` and enters ``_check_cache_transfer_errors -> _handle_errors ->
_enqueue_responses -> tp_gather``. Peer ranks without a local error continue to ``_can_queue -> tp_allgather``. The
two different TP collectives on the same group hang MPI"; the hang detector's dump showed one rank in
``tp_gather`` and the other 15 in ``tp_allgather``. The fix: at the top of every iteration, ``tp_allgather`` one
bool ("does this rank have local error requests"), return if no rank has any, otherwise every rank calls
``_handle_errors`` with its own, possibly empty, list.
Code modelled (written here, not copied): ``tensorrt_llm/_torch/pyexecutor/py_executor.py`` ``_executor_loop``
(error check, ``_can_queue``, forward, responses each iteration), ``_check_cache_transfer_errors``,
``_handle_errors``, ``_enqueue_responses`` (``tp_gather`` of the responses to rank 0 under attention-DP) and
``Distributed.tp_gather`` / ``tp_allgather`` (object gathers on the TP group; torch's ``gather_object`` /
``all_gather_object`` here, where TensorRT-LLM uses MPI or torch).

2 ranks = TP 2 with attention-DP, each owning 3 requests; a tiny MoE-like forward all-reduces the hidden states
every iteration (padded to 3 rows, as attention-DP pads with dummy requests). At iteration 3 the KV transfer of rank 1's ``req-4`` fails (a stand-in for the NIXL/UCX failure,
injected on rank 1 only): rank 1 goes into ``tp_gather`` from the error path while rank 0 goes into
``tp_allgather`` from ``_can_queue``.
Bug: the error path entered on the rank's own error list (BUG); waiting: rank 1 in ``tp_gather`` via
``_handle_errors`` (WAITS), rank 0 in ``tp_allgather`` via ``_can_queue`` (WAITS).
"""

import datetime

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

DISAGG_TRANS_ERROR = "DISAGG_TRANS_ERROR"
FAILED_TRANSFERS = {3: {1: "req-4"}}
MAX_BATCH = 3


class Request:
    def __init__(self, rid, tokens_to_generate):
        self.id = rid
        self.remaining = tokens_to_generate
        self.state = "GENERATION_IN_PROGRESS"
        self.output = []


class Distributed:
    def __init__(self):
        self.tp_rank = dist.get_rank()
        self.tp_size = dist.get_world_size()

    def tp_gather(self, obj, root=0):
        out = [None] * self.tp_size if self.tp_rank == root else None
        dist.gather_object(obj, out, dst=root)  # WAITS
        return out

    def tp_allgather(self, obj):
        out = [None] * self.tp_size
        dist.all_gather_object(out, obj)  # WAITS
        return out


class PyExecutor:
    def __init__(self):
        self.dist = Distributed()
        rank = self.dist.tp_rank
        self.active_requests = [Request(f"req-{3 * rank + i}", 4 + i) for i in range(3)]
        self.responses = {}
        self.iter = 0
        torch.manual_seed(0)
        self.experts = torch.randn(2, 8, 8) / 3

    def _check_cache_transfer_errors(self):
        failed = FAILED_TRANSFERS.get(self.iter, {}).get(self.dist.tp_rank)
        for req in self.active_requests:
            if req.id == failed:
                req.state = DISAGG_TRANS_ERROR
        local_error_requests = [r for r in self.active_requests if r.state == DISAGG_TRANS_ERROR]
        if local_error_requests:  # BUG
            self._handle_errors(local_error_requests)  # WAITS

    def _handle_errors(self, requests):
        for req in requests:
            self.active_requests.remove(req)
        self._enqueue_responses([(req.id, f"error: KV cache transfer failed at iteration {self.iter}") for req in requests])  # WAITS

    def _enqueue_responses(self, responses):
        gathered = self.dist.tp_gather(responses)  # WAITS
        if self.dist.tp_rank == 0:
            for rank_responses in gathered:
                for rid, text in rank_responses:
                    self.responses[rid] = text

    def _can_queue(self):
        counts = self.dist.tp_allgather(len(self.active_requests))  # WAITS
        return sum(counts) > 0

    def _forward_step(self):
        hidden = torch.zeros(MAX_BATCH, 8)
        hidden[: len(self.active_requests)] = float(self.dist.tp_rank + 1)
        partial = hidden @ self.experts[self.dist.tp_rank]
        dist.all_reduce(partial)
        return partial.sum(-1)

    def _update_requests(self, logits):
        finished = []
        for req, value in zip(list(self.active_requests), logits.tolist()):
            req.output.append(int(abs(value) * 100) % 50)
            req.remaining -= 1
            if req.remaining == 0:
                self.active_requests.remove(req)
                finished.append((req.id, f"tokens {req.output}"))
        return finished

    def _executor_loop(self):
        while True:
            self.iter += 1
            self._check_cache_transfer_errors()  # WAITS
            if not self._can_queue():  # WAITS
                break
            logits = self._forward_step()
            self._enqueue_responses(self._update_requests(logits))
        return self.responses


def worker():
    executor = PyExecutor()
    responses = executor._executor_loop()  # WAITS
    if dist.get_rank() == 0:
        for rid in sorted(responses):
            print(f"{rid}: {responses[rid]}", flush=True)
    print(f"[rank {dist.get_rank()}] executor loop done after {executor.iter} iterations", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
