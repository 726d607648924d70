"""SGLang, fixed: the post-load `monitored_barrier` timeout is configurable and its default is raised, so a TP
rank that is slow but healthy in `post_load_weights` still passes the barrier.

Source: sgl-project/sglang PR #39128 (2026): the hard-coded 480 s timeout of `dist_barrier_after_load` expired
while the TP ranks holding the DSpark checkpoint's heavier expert shards were still in `post_load_weights`; the
PR raises the default to 1800 s and reads `SGLANG_MODEL_LOADING_TIMEOUT_S`. Modelled: ModelRunner.load_model ->
`post_load_weights` -> `dist_barrier_after_load` on the gloo group. Scaled: TP rank 1 needs 4 s, the default
timeout is 12 s.
"""

import datetime
import os
import time

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

# The PR: configurable through SGLANG_MODEL_LOADING_TIMEOUT_S, default raised from 480 s to 1800 s (scaled: 12 s).
MODEL_LOADING_TIMEOUT_S = int(os.environ.get("SGLANG_MODEL_LOADING_TIMEOUT_S", "12"))


def load_shards(tp_rank):
    """Each TP rank reads its shards; the checkpoint puts the heavier expert shards on TP rank 1."""
    gen = torch.Generator().manual_seed(tp_rank)
    num_experts = 8 if tp_rank == 1 else 2
    return {f"experts.{i}.w": torch.randn(16, 16, generator=gen) for i in range(num_experts)}


def post_load_weights(tp_rank, weights):
    """Scale-layout transforms and norm caching: time grows with the rank's expert shards."""
    for name in list(weights):
        weights[name] = weights[name].t().contiguous() * 0.5
        time.sleep(0.5 if tp_rank == 1 else 0.1)
    return weights


def dist_barrier_after_load(tp_rank):
    try:
        dist.monitored_barrier(timeout=datetime.timedelta(seconds=MODEL_LOADING_TIMEOUT_S), wait_all_ranks=True)
    except RuntimeError as exc:
        raise RuntimeError(
            f"TP rank {tp_rank} could finish the model loading, but there are other ranks that didn't finish "
            f"loading. It is likely due to unexpected failures (e.g., OOM) or a slow node. ({exc})"
        ) from exc


def load_model(tp_rank):
    weights = post_load_weights(tp_rank, load_shards(tp_rank))
    dist_barrier_after_load(tp_rank)
    return weights


def worker():
    tp_rank = dist.get_rank()
    start = time.monotonic()
    weights = load_model(tp_rank)
    local = torch.tensor([float(len(weights))])
    dist.all_reduce(local)
    print(f"TP rank {tp_rank}: model loaded in {time.monotonic() - start:.1f} s, {int(local.item())} expert "
          f"shards across TP ranks", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
