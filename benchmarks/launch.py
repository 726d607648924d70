"""Launch cost of a local gloo group: barrierlab.run (warm) vs torch.multiprocessing.spawn vs torchrun.

    python benchmarks/launch.py [--repeat 10] [--slow-repeat 3]
    python benchmarks/launch.py --compare HEAD~1 [--pairs 50] [--record]


For world sizes 2, 4 and 8 it prints the median time from the launch call to (a) every rank past a
first barrier and (b) every rank exited, and the PSS of a live 4-rank group including helper processes
(barrierlab: warm process + ranks; spawn: ranks; torchrun: agent + ranks). Each rank uses one thread.

``--compare REV`` instead measures this tree's launcher against the one in git revision REV in the same
run: two kernel processes (one per version, each with its warm process ready) launch 4 ranks to a first
barrier in turn, in alternating order, ``--pairs`` times; it prints each one's median, the median of the
per-pair ratios (new / old), the same for the whole call (launch to return), the machine's load average before
and after, and the PSS and USS of each one's live 4-rank group (USS, the memory only that group uses, is the
fairer comparison: PSS splits torch's shared pages among every process using them, other jobs' included). It
also times ``result.unpickle_isolated`` for the values 4 ranks typically return. The runs record nothing unless
``--record`` is given (then as ``bl.run``'s default does).
"""

from __future__ import annotations

import argparse
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import timedelta

import psutil
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import barrierlab as bl

HERE = os.path.dirname(os.path.abspath(__file__))
SIZES = (2, 4, 8)
HOLD = 1.0  # seconds a group stays alive while its memory is sampled
#: Seconds between two barrierlab calls: a learner starts the next cell later than this after the last one
#: returned, and in it the warm process forks the ranks of the next run ahead of time (its pool). Calls back
#: to back without a gap measure a launch whose pool is still being refilled.
GAP = 0.3


def group_pss(root_pid: int, include_root: bool) -> int:
    root = psutil.Process(root_pid)
    procs = root.children(recursive=True) + ([root] if include_root else [])
    total = 0
    for proc in procs:
        try:
            total += proc.memory_full_info().pss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return total


def sample_later(fn, delay: float, out: list) -> threading.Thread:
    def target():
        time.sleep(delay)
        out.append(fn())

    thread = threading.Thread(target=target)
    thread.start()
    return thread


# --- barrierlab -------------------------------------------------------------------------------------
def past_first_barrier(hold: float = 0.0) -> float:
    dist.barrier()
    passed = time.monotonic()
    time.sleep(hold)
    return passed


def bench_barrierlab(n: int, record: bool = False, gap: float = GAP) -> tuple[float, float]:
    time.sleep(gap)
    start = time.monotonic()
    run = bl.run(past_first_barrier, n, record=record)
    end = time.monotonic()
    assert run.ok, run
    return max(run.values) - start, end - start


def bench_recording(n: int) -> tuple[float, float]:
    return bench_barrierlab(n, record=True)


def bench_back_to_back(n: int) -> tuple[float, float]:
    """A call made as soon as the last returned (a loop in one cell): its ranks are forked while it waits."""
    return bench_barrierlab(n, record=True, gap=0.0)


def pss_barrierlab() -> int:
    out: list = []
    thread = sample_later(lambda: group_pss(bl.launch._warm.process.pid, include_root=True), HOLD / 2, out)
    bl.run(past_first_barrier, 4, args=(HOLD,), record=False)
    thread.join()
    return out[0]


# --- torch.multiprocessing.spawn ---------------------------------------------------------------------
def spawn_worker(rank: int, n: int, init_file: str, result_dir: str, hold: float) -> None:
    torch.set_num_threads(1)
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    dist.init_process_group(
        "gloo", init_method=f"file://{init_file}", rank=rank, world_size=n, timeout=timedelta(seconds=30)
    )
    dist.barrier()
    with open(os.path.join(result_dir, f"{rank}"), "w") as f:
        f.write(repr(time.monotonic()))
    time.sleep(hold)
    dist.destroy_process_group()


def bench_spawn(n: int, hold: float = 0.0) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        start = time.monotonic()
        mp.spawn(spawn_worker, args=(n, os.path.join(tmp, "init"), tmp, hold), nprocs=n)
        end = time.monotonic()
        passed = max(float(open(os.path.join(tmp, f"{r}")).read()) for r in range(n))
    return passed - start, end - start


def pss_spawn() -> int:
    out: list = []
    thread = sample_later(lambda: group_pss(os.getpid(), include_root=False), HOLD * 2.5, out)
    bench_spawn(4, hold=HOLD * 3)
    thread.join()
    return out[0]


# --- torchrun -----------------------------------------------------------------------------------------
TORCHRUN_WORKER = """
import os, sys, time, torch, torch.distributed as dist
torch.set_num_threads(1)
dist.init_process_group("gloo")
dist.barrier()
open(os.path.join(sys.argv[1], os.environ["RANK"]), "w").write(repr(time.monotonic()))
time.sleep(float(sys.argv[2]))
dist.destroy_process_group()
"""


def bench_torchrun(n: int, hold: float = 0.0, pss_out: list | None = None) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        worker = os.path.join(tmp, "worker.py")
        with open(worker, "w") as f:
            f.write(TORCHRUN_WORKER)
        env = dict(os.environ, GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1")
        start = time.monotonic()
        agent = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "torch.distributed.run",
                "--standalone",
                f"--nproc-per-node={n}",
                worker,
                tmp,
                str(hold),
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        if pss_out is not None:
            thread = sample_later(lambda: group_pss(agent.pid, include_root=True), hold * 0.8 + 3.5, pss_out)
        code = agent.wait(timeout=120)
        end = time.monotonic()
        if pss_out is not None:
            thread.join()
        assert code == 0, f"torchrun exited with {code}"
        passed = max(float(open(os.path.join(tmp, f"{r}")).read()) for r in range(n))
    return passed - start, end - start


def pss_torchrun() -> int:
    out: list = []
    bench_torchrun(4, hold=4.0, pss_out=out)
    return out[0]


def median_pair(fn, n: int, repeat: int) -> tuple[float, float]:
    samples = [fn(n) for _ in range(repeat)]
    return statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples)


# --- paired comparison with another revision -------------------------------------------------------------
KERNEL = """
import sys, time
sys.path.insert(0, sys.argv[1])
import psutil, torch.distributed as dist, barrierlab as bl

def past_first_barrier(hold=0.0):
    dist.barrier()
    passed = time.monotonic()
    time.sleep(hold)
    return passed

def group_pss():
    root = psutil.Process(bl.launch._warm.process.pid)
    infos = [p.memory_full_info() for p in [root] + root.children(recursive=True)]
    return f"{sum(i.pss for i in infos)} {sum(i.uss for i in infos)}"

bl.warm_up(wait=True)
bl.run(past_first_barrier, 4, record=False)
print("ready", flush=True)
for line in sys.stdin:
    if line.strip() == "pss":
        box = []
        import threading
        t = threading.Timer(0.5, lambda: box.append(group_pss()))
        t.start()
        bl.run(past_first_barrier, 4, args=(1.0,), record=False)
        t.join()
        print(box[0], flush=True)
        continue
    time.sleep(float(line))  # the gap a learner leaves between cells (the pool refills in it)
    start = time.monotonic()
    run = bl.run(past_first_barrier, 4, record=sys.argv[2] == "record")
    end = time.monotonic()
    assert run.ok, run
    print(max(run.values) - start, end - start, flush=True)
"""


def _kernel(src: str, record: bool) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    kernel = subprocess.Popen(
        [sys.executable, "-c", KERNEL, src, "record" if record else "plain"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert kernel.stdout.readline().strip() == "ready"
    return kernel


def _ask(kernel: subprocess.Popen, line: str) -> list[float]:
    kernel.stdin.write(line + "\n")
    kernel.stdin.flush()
    return [float(x) for x in kernel.stdout.readline().split()]


def compare(revision: str, pairs: int, record: bool = False) -> None:
    root = subprocess.run(
        ["git", "rev-parse", "--show-toplevel"], cwd=HERE, capture_output=True, text=True, check=True
    ).stdout.strip()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as old_tree:
        archive = subprocess.run(["git", "archive", revision, "src"], cwd=root, capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", old_tree], input=archive.stdout, check=True)
        kernels = {
            "new": _kernel(os.path.join(root, "src"), record),
            "old": _kernel(os.path.join(old_tree, "src"), record),
        }
        try:
            times: dict[str, list[float]] = {"new": [], "old": []}
            whole: dict[str, list[float]] = {"new": [], "old": []}
            for i in range(pairs):
                order = ("new", "old") if i % 2 == 0 else ("old", "new")
                for name in order:
                    barrier, call = _ask(kernels[name], str(GAP))
                    times[name].append(barrier)
                    whole[name].append(call)
            pss = {name: _ask(kernel, "pss") for name, kernel in kernels.items()}
        finally:
            for kernel in kernels.values():
                kernel.stdin.close()
                kernel.wait(timeout=30)
    ratios = [n / o for n, o in zip(times["new"], times["old"])]
    load_after = os.getloadavg()
    print(f"\n4 ranks to a first barrier, {pairs} interleaved pairs; this tree vs {revision}")
    print(
        f"load average (1/5/15 min) before {' / '.join(f'{x:.1f}' for x in load_before)}, "
        f"after {' / '.join(f'{x:.1f}' for x in load_after)}; {os.cpu_count()} cores"
    )
    print("| launcher | median (s) | 10th–90th percentile (s) | PSS / USS of live 4-rank group (MiB) |")
    print("|---|---:|---:|---:|")
    for name in ("new", "old"):
        deciles = statistics.quantiles(times[name], n=10)
        print(
            f"| {name} | {statistics.median(times[name]):.4f} | {deciles[0]:.4f}–{deciles[-1]:.4f} | "
            f"{pss[name][0] / 2**20:.0f} / {pss[name][1] / 2**20:.0f} |"
        )
    print(f"median of per-pair ratios new/old: {statistics.median(ratios):.3f}")
    calls = [n / o for n, o in zip(whole["new"], whole["old"])]
    print(
        f"whole call (launch to return, rank exit and clean-up included): median new "
        f"{statistics.median(whole['new']):.4f} s, old {statistics.median(whole['old']):.4f} s, "
        f"median of per-pair ratios {statistics.median(calls):.3f}"
    )


def unpickle_costs(repeat: int = 30) -> None:
    """What it costs the kernel to turn 4 ranks' returned values into objects (see result.unpickle_isolated)."""
    import torch as _torch

    from barrierlab.result import unpickle_isolated

    _torch.set_num_threads(2)
    a = _torch.randn(256, 256)
    (a @ a).sum()  # like a kernel that has used torch's thread pool
    cases = {
        "4 ints": [1, 2, 3, 4],
        "4 dicts of lists": [{"loss": [0.1] * 100}] * 4,
        "4 tensors of 1000 floats": [_torch.ones(1000)] * 4,
        "4 tensors of 10 MB": [_torch.ones(2_500_000)] * 4,
    }
    print("\n| 4 returned values | unpickle in the kernel (ms) | unpickle_isolated (ms) |\n|---|---:|---:|")
    for name, values in cases.items():
        blobs = [pickle.dumps(v) for v in values]
        direct, isolated = [], []
        for _ in range(repeat):
            t = time.perf_counter()
            [pickle.loads(b) for b in blobs]
            direct.append(time.perf_counter() - t)
            t = time.perf_counter()
            unpickle_isolated(blobs)
            isolated.append(time.perf_counter() - t)
        print(f"| {name} | {statistics.median(direct) * 1e3:.2f} | {statistics.median(isolated) * 1e3:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=10, help="runs per size for barrierlab")
    parser.add_argument("--slow-repeat", type=int, default=3, help="runs per size for spawn and torchrun")
    parser.add_argument("--compare", metavar="REV", help="compare with the launcher of git revision REV instead")
    parser.add_argument("--pairs", type=int, default=50, help="interleaved pairs for --compare")
    parser.add_argument("--record", action="store_true", help="--compare runs with recording on (bl.run's default)")
    args = parser.parse_args()
    if args.compare:
        compare(args.compare, args.pairs, args.record)
        unpickle_costs()
        return

    cold = time.monotonic()
    bl.warm_up(wait=True)
    print(
        f"warm process ready (torch imported) in {time.monotonic() - cold:.2f} s; "
        f"torch {torch.__version__}, {os.cpu_count()} cores"
    )
    bl.run(past_first_barrier, 2, record=False)

    rows = []
    for name, fn, repeat in (
        ("barrierlab.run (warm)", bench_barrierlab, args.repeat),
        ("barrierlab.run (warm, recording: the default)", bench_recording, args.repeat),
        ("barrierlab.run (recording, calls back to back)", bench_back_to_back, args.repeat),
        ("torch.multiprocessing.spawn", bench_spawn, args.slow_repeat),
        ("torchrun --standalone", bench_torchrun, args.slow_repeat),
    ):
        for n in SIZES:
            rows.append((name, n) + median_pair(fn, n, repeat))
    pss = {
        "barrierlab.run (warm)": pss_barrierlab(),
        "barrierlab.run (warm, recording: the default)": 0,
        "barrierlab.run (recording, calls back to back)": 0,
        "torch.multiprocessing.spawn": pss_spawn(),
        "torchrun --standalone": pss_torchrun(),
    }

    print("\n| launcher | ranks | to first barrier (s) | to all exited (s) | PSS of live 4-rank group (MiB) |")
    print("|---|---:|---:|---:|---:|")
    for name, n, first, exited in rows:
        memory = f"{pss[name] / 2**20:.0f}" if n == 4 and pss[name] else ""
        print(f"| {name} | {n} | {first:.3f} | {exited:.3f} | {memory} |")
    ours = {n: first for name, n, first, _ in rows if name == "barrierlab.run (warm)"}
    spawn = {n: first for name, n, first, _ in rows if name.startswith("torch.multi")}
    print(f"\nbarrierlab vs spawn, 4 ranks to first barrier: {spawn[4] / ours[4]:.0f}x faster")
    whole = {(name, n): exited for name, n, _, exited in rows}
    spawn_whole = whole[("torch.multiprocessing.spawn", 4)]
    for name in ("barrierlab.run (warm, recording: the default)", "barrierlab.run (recording, calls back to back)"):
        print(f"{name}, 4 ranks, whole call vs spawn's: {spawn_whole / whole[(name, 4)]:.0f}x faster")


if __name__ == "__main__":
    main()
