"""llm-compressor DDP examples: every rank loads an already-downloaded model by its branch name, so every rank
rewrites the Hub cache's `refs/main` (truncate, then write) while the others read it, and a rank that reads it
between the two finds no commit and no shard (buggy).

Source: vllm-project/llm-compressor issue #2984 ("Loading models with DDP leads to race condition on HF
`cached_files`"), PR #2988 ("Fix DDP race condition on HF cached_files") and PR #3030; the examples' `init_dist()` then
`from_pretrained(MODEL_ID)` on every rank; huggingface_hub `_snapshot_download` / `try_to_load_from_cache`.
As PR #2988 explains: `snapshot_download` rewrites `refs/<revision>` whenever the caller passes a symbolic
revision -- `if revision != commit_hash: with open(ref_path, "w") as f: f.write(commit_hash)` -- a non-atomic
truncate-then-write that runs even when the cache is complete; `try_to_load_from_cache` reads the ref with a plain
`open`, and "a rank landing inside the window reads an empty string, fails the `revision not in cached_shas` check,
and reports the shard missing" (`does not appear to have a file named <shard>`). PR #3030: "The `dist.barrier()`
inside `init_dist()` only synchronizes the process group". Here rank 0 raises that OSError; rank 1 loads the model and waits in the first
all-reduce of the calibration.

Stand-ins: a two-shard model in a Hub-style cache folder built in code (rank 0 fills it once, before the run's
barrier: "the model is already downloaded"); the Hub's branch-to-commit answer is a dict; the truncate-then-write
window is widened to 0.4 s (a slow shared filesystem; microseconds on a local disk, where the issue needed many
ranks and shards to hit it), model construction between resolving and reading the shards takes 0.4 s, and rank 1
starts loading 0.6 s after rank 0 (its own setup).
"""

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

MODEL_ID = "tiny-org/tiny-moe"
COMMIT = "3f1c0ffee0d2a7b41c9e8a5d6b0c7e2f4a1b9d88"
HUB_REFS = {"main": COMMIT}  # stand-in: the Hub API's answer for a branch
SHARDS = ["model-00001-of-00002.pt", "model-00002-of-00002.pt"]


def _cache_dir():
    return os.path.join(tempfile.gettempdir(), f"r38_hfcache_bug_{os.environ.get('MASTER_PORT', '0')}_{os.getppid()}")


def _repo_dir(cache):
    return os.path.join(cache, "models--" + MODEL_ID.replace("/", "--"))


def populate_cache(cache):
    """The earlier download: refs/main and a complete snapshot."""
    repo = _repo_dir(cache)
    os.makedirs(os.path.join(repo, "refs"), exist_ok=True)
    snapshot = os.path.join(repo, "snapshots", COMMIT)
    os.makedirs(snapshot, exist_ok=True)
    torch.manual_seed(0)
    torch.save({"0.weight": torch.randn(8, 4)}, os.path.join(snapshot, SHARDS[0]))
    torch.save({"2.weight": torch.randn(2, 8)}, os.path.join(snapshot, SHARDS[1]))
    with open(os.path.join(repo, "refs", "main"), "w") as f:
        f.write(COMMIT)


def snapshot_download(cache, repo_id, revision):
    commit_hash = HUB_REFS.get(revision, revision)
    if revision != commit_hash:
        ref_path = os.path.join(_repo_dir(cache), "refs", revision)
        with open(ref_path, "w") as f:
            time.sleep(0.4)  # stand-in: the truncate-then-write window on a slow filesystem
            f.write(commit_hash)
    return os.path.join(_repo_dir(cache), "snapshots", commit_hash)


def try_to_load_from_cache(cache, repo_id, filename, revision):
    repo = _repo_dir(cache)
    cached_shas = os.listdir(os.path.join(repo, "snapshots"))
    if revision not in cached_shas:
        with open(os.path.join(repo, "refs", revision)) as f:
            revision = f.read()
    if revision not in cached_shas:
        return None
    path = os.path.join(repo, "snapshots", revision, filename)
    return path if os.path.isfile(path) else None


def from_pretrained(cache, repo_id, revision="main"):
    snapshot_download(cache, repo_id, revision)
    time.sleep(0.4)  # stand-in: config parsing and model construction
    model = torch.nn.Sequential(torch.nn.Linear(4, 8, bias=False), torch.nn.ReLU(), torch.nn.Linear(8, 2, bias=False))
    state = {}
    for shard in SHARDS:
        resolved = try_to_load_from_cache(cache, repo_id, shard, revision)
        if resolved is None:
            raise OSError(f"{repo_id} does not appear to have a file named {shard}.")
        state.update(torch.load(resolved))
    model.load_state_dict(state)
    return model


def calibrate(model, samples):
    """DDP oneshot calibration: per-channel activation sums, all-reduced over the ranks."""
    sums = torch.zeros(8)
    with torch.no_grad():
        for x in samples:
            sums += model[1](model[0](x)).abs().sum(0)
    dist.all_reduce(sums)  # WAITS
    return sums


def worker():
    rank = dist.get_rank()
    cache = _cache_dir()
    if rank == 0:
        populate_cache(cache)
    dist.barrier()  # init_dist()'s barrier: the cache is complete on every rank's view
    if rank == 1:
        time.sleep(0.6)  # stand-in: rank 1's own setup before it loads the model
    model = from_pretrained(cache, MODEL_ID)  # BUG
    g = torch.Generator().manual_seed(10 + rank)
    stats = calibrate(model, [torch.randn(3, 4, generator=g) for _ in range(2)])  # WAITS
    print(f"[rank {rank}] calibration scale {stats.max().item():.4f}")
    dist.barrier()
    if rank == 0:
        shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
