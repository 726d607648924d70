"""vLLM MoE + data parallel: a step with zero scheduled tokens still joins the DP coordination through a dummy run.

Models: vllm-project/vllm issue #43547 ("MoE+DP — zero-token-scheduled step skips coordinate_batch_across_dp for
ray/mp DP backends → ~T+1h NCCL reduce_scatter deadlock": "When ``num_scheduled_tokens == 0`` the ``_dummy_run(1)``
that fires ``coordinate_batch_across_dp`` is gated on ``distributed_executor_backend == "external_launcher"``.
Under ``ray`` (and ``mp``) DP a zero-token-scheduled rank silently returns ``EMPTY_MODEL_RUNNER_OUTPUT`` without
participating in the per-step DP collective"; the suggested fix drops the backend gate). Code modelled (written
here, not copied): ``vllm/v1/worker/gpu_model_runner.py`` ``execute_model`` (the zero-token early return and its
``_dummy_run(1)``), ``coordinate_batch_across_dp`` / ``DPMetadata`` (an all-reduce of every DP rank's token count
on the DP group, from which every rank pads to the largest), the MoE layer's naive DP dispatch/combine (an
all-gather of the padded hidden states, the experts, then the combine -- here an all-reduce, as gloo has no
reduce-scatter), and the engine core's step loop.

The fix modelled is the issue's: a rank with zero scheduled tokens always runs ``_dummy_run(1)`` -- the DP
coordination and the MoE layer's collectives with one dummy token -- whatever the executor backend, then returns
the empty output. 2 DP ranks (backend ``mp``), 8 steps; rank 1 has zero tokens at step 4 and joins with its dummy
token; both finish the wave and meet in the shutdown barrier.
"""

import datetime

import torch
import torch.distributed as dist
import torch.nn as nn

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

HIDDEN = 8
NUM_EXPERTS = 4
NUM_STEPS = 8
DISTRIBUTED_EXECUTOR_BACKEND = "mp"
# tokens the scheduler schedules on each DP rank at each step of the wave
SCHEDULED_TOKENS = {0: [6, 3, 3, 2, 2, 2, 1, 1], 1: [5, 2, 2, 0, 3, 2, 2, 1]}
EMPTY_MODEL_RUNNER_OUTPUT = {"sampled": []}


class MoELayer(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.router = nn.Linear(HIDDEN, NUM_EXPERTS)
        self.experts = nn.ModuleList(nn.Linear(HIDDEN, HIDDEN) for _ in range(NUM_EXPERTS))

    def forward(self, hidden, dp_rank, num_tokens_across_dp):
        dp_size = num_tokens_across_dp.numel()
        max_tokens = int(num_tokens_across_dp.max())
        padded = torch.zeros(max_tokens, HIDDEN)
        padded[: hidden.shape[0]] = hidden
        gathered = [torch.empty(max_tokens, HIDDEN) for _ in range(dp_size)]
        dist.all_gather(gathered, padded)
        tokens = torch.cat(gathered)
        expert = self.router(tokens).argmax(-1)
        out = torch.zeros_like(tokens)
        owned = range(dp_rank, NUM_EXPERTS, dp_size)
        for e in owned:
            sel = expert == e
            out[sel] = self.experts[e](tokens[sel])
        dist.all_reduce(out)
        start = dp_rank * max_tokens
        return out[start : start + hidden.shape[0]]


class GPUModelRunner:
    def __init__(self, dp_rank, dp_size):
        self.dp_rank, self.dp_size = dp_rank, dp_size
        self.distributed_executor_backend = DISTRIBUTED_EXECUTOR_BACKEND
        self.embed = nn.Embedding(64, HIDDEN)
        self.moe = MoELayer()
        self.lm_head = nn.Linear(HIDDEN, 64)

    def coordinate_batch_across_dp(self, num_tokens):
        num_tokens_across_dp = torch.zeros(self.dp_size, dtype=torch.int64)
        num_tokens_across_dp[self.dp_rank] = num_tokens
        dist.all_reduce(num_tokens_across_dp)
        return num_tokens_across_dp

    def _model_forward(self, input_ids, num_tokens_across_dp):
        with torch.no_grad():
            hidden = self.moe(self.embed(input_ids), self.dp_rank, num_tokens_across_dp)
            return self.lm_head(hidden).argmax(-1)

    def _dummy_run(self, num_tokens):
        num_tokens_across_dp = self.coordinate_batch_across_dp(num_tokens)
        self._model_forward(torch.zeros(num_tokens, dtype=torch.long), num_tokens_across_dp)

    def execute_model(self, scheduler_output):
        num_scheduled_tokens = scheduler_output["total_num_scheduled_tokens"]
        if num_scheduled_tokens == 0:
            self._dummy_run(1)
            return EMPTY_MODEL_RUNNER_OUTPUT
        num_tokens_across_dp = self.coordinate_batch_across_dp(num_scheduled_tokens)
        sampled = self._model_forward(scheduler_output["input_ids"], num_tokens_across_dp)
        return {"sampled": sampled.tolist()}


class EngineCore:
    def __init__(self, dp_rank, dp_size):
        self.dp_rank = dp_rank
        self.model_runner = GPUModelRunner(dp_rank, dp_size)

    def schedule(self, step):
        n = SCHEDULED_TOKENS[self.dp_rank][step]
        g = torch.Generator().manual_seed(1000 * self.dp_rank + step)
        return {"total_num_scheduled_tokens": n, "input_ids": torch.randint(0, 64, (n,), generator=g)}

    def run_busy_loop(self):
        produced = 0
        for step in range(NUM_STEPS):
            output = self.model_runner.execute_model(self.schedule(step))
            produced += len(output["sampled"])
        return produced


def worker():
    dp_rank, dp_size = dist.get_rank(), dist.get_world_size()
    produced = EngineCore(dp_rank, dp_size).run_busy_loop()
    print(f"[dp rank {dp_rank}] wave done: {produced} tokens sampled", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
