"""SGLang: after model loading every TP rank enters a gloo `monitored_barrier` whose timeout is hard-coded; the
ranks holding the heavier expert shards are still in `post_load_weights` when it expires.

Source: sgl-project/sglang PR #39128 ("[ROCm][DSpark] Make model loading barrier timeout configurable, raise...",
2026): `dist_barrier_after_load` calls `dist.monitored_barrier` with a fixed 480 s timeout; with the DSpark
checkpoint TP0 and TP7 get the heavier expert shards and their `post_load_weights` takes 10-15 minutes against
~4 for the others, so the barrier times out and the job dies with "TP rank X could finish the model loading, but
there are other ranks that didn't finish loading". Modelled: ModelRunner.load_model ->
`post_load_weights` -> `dist_barrier_after_load` (a monitored barrier on the CPU/gloo group).

Scaled down: the hard-coded timeout is 2 s and TP rank 1's post-load transform takes 4 s (rank 0's 0.2 s).
Rank 0 (the monitor) gives up after 2 s while rank 1 is healthy and still working.

The bug: the barrier's timeout is a constant far below what a slow but healthy rank needs.
"""

import datetime
import time

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15

MODEL_LOADING_TIMEOUT_S = 2  # BUG


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
        dist.monitored_barrier(timeout=datetime.timedelta(seconds=MODEL_LOADING_TIMEOUT_S), wait_all_ranks=True)  # WAITS
    except RuntimeError as exc:
        raise RuntimeError(
            f"TP rank {tp_rank} could finish the model loading, but there are other ranks that didn't finish "
            f"loading. It is likely due to unexpected failures (e.g., OOM) or a slow node. ({exc})"
        ) from exc


def load_model(tp_rank):
    weights = post_load_weights(tp_rank, load_shards(tp_rank))
    dist_barrier_after_load(tp_rank)  # WAITS
    return weights


def worker():
    tp_rank = dist.get_rank()
    start = time.monotonic()
    weights = load_model(tp_rank)  # WAITS
    local = torch.tensor([float(len(weights))])
    dist.all_reduce(local)
    print(f"TP rank {tp_rank}: model loaded in {time.monotonic() - start:.1f} s, {int(local.item())} expert "
          f"shards across TP ranks", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
