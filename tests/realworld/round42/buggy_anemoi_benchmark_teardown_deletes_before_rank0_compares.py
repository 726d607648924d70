"""Buggy: the benchmark test returns on rank 1 as soon as its own part is done, and the test's teardown deletes the
run folder while rank 0 is still comparing the profiler reports in it against the benchmark server.

Source: ecmwf/anemoi-core PR #1267 ("fix(training): fix race condition in benchmark tests", 2026-07): "sometimes the
final benchmark test will fail, when process 0 can't find the files it needs to analyse the performance. that's bc
rank 1 has already finished and deleted the files. this PR adds a barrier at the end of the test";
``training/tests/integration/test_benchmark.py`` ``test_benchmark_training_cycle``, which calls
``benchmark(cfg, test_case, store)`` (torch.distributed is initialised inside it, every rank trains and profiles, and
process 0 then compares the results against the benchmark server reached over ssh) and returns; the ``multigpu``
tests run under one launcher per rank.

Here two ranks run the test as pytest would: set up the ``benchmark_config`` fixture (a run folder shared by the
ranks), run the test, tear the fixture down (remove the run folder). Both ranks train a few steps and write their
profiler report; rank 0 first fetches the reference numbers (about a second over ssh), then reads every rank's
report. By then rank 1 has returned from the test and its teardown has removed the folder: rank 0 fails with
``FileNotFoundError``. No rank waits; the race is on the files.
"""

import glob
import json
import os
import shutil
import tempfile
import time
from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15


def benchmark_config():
    """The pytest fixture: a run folder for this benchmark case, removed at teardown."""
    box = [tempfile.mkdtemp(prefix="bl_r42_anemoi_") if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(box, src=0)
    cfg = {"output_dir": box[0], "steps": 3}
    yield cfg, "training_cycle"
    shutil.rmtree(cfg["output_dir"], ignore_errors=True)


def train_and_profile(cfg, rank):
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 1)
    g = torch.Generator().manual_seed(rank)
    start = time.perf_counter()
    for _ in range(cfg["steps"]):
        model.zero_grad()
        x, y = torch.randn(16, 8, generator=g), torch.randn(16, 1, generator=g)
        torch.nn.functional.mse_loss(model(x), y).backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
        with torch.no_grad():
            for p in model.parameters():
                p -= 0.01 * p.grad
    report = {"rank": rank, "time_per_step": (time.perf_counter() - start) / cfg["steps"]}
    os.makedirs(os.path.join(cfg["output_dir"], "profiler"), exist_ok=True)
    with open(os.path.join(cfg["output_dir"], "profiler", f"rank{rank}.json"), "w") as f:
        json.dump(report, f)
    dist.barrier()  # the end of training: every rank's report is written


def compare_against_server(cfg, store):
    time.sleep(1.0)  # fetch the reference results from the benchmark server over ssh
    reports = []
    for rank in range(dist.get_world_size()):
        with open(os.path.join(cfg["output_dir"], "profiler", f"rank{rank}.json")) as f:
            reports.append(json.load(f))
    files = glob.glob(os.path.join(cfg["output_dir"], "profiler", "*.json"))
    return {"store": store, "reports": len(files), "slowest_step": max(r["time_per_step"] for r in reports)}


def benchmark(cfg, test_case, store):
    rank = dist.get_rank()
    train_and_profile(cfg, rank)
    if rank == 0:
        result = compare_against_server(cfg, store)
        print(f"{test_case}: {result}")


def test_benchmark_training_cycle(benchmark_config):
    cfg, test_case = benchmark_config
    store = "ssh://user@benchmark-server:/benchmarks"
    benchmark(cfg, test_case, store)  # BUG


def worker():
    fixture = benchmark_config()
    params = next(fixture)  # setup
    test_benchmark_training_cycle(params)
    next(fixture, None)  # teardown
    print(f"rank {dist.get_rank()}: test passed")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
