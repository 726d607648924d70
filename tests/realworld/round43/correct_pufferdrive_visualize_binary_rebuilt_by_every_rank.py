"""PufferDrive, fixed: with rendering on, only rank 0 deletes and rebuilds the shared `./visualize` binary; the other
ranks wait for it at a barrier.

Source: Emerge-Lab/PufferDrive issue #281, "[BUG] Multi-GPU runs" (February 2026): "there's a bug in
`ensure_drive_binary()` in `pufferrl.py` that causes race condition in multi-GPU runs. We should probably guard the
function with something like: `if torch.distributed.is_initialized(): if torch.distributed.get_rank() != 0:
torch.distributed.barrier(); return`" -- a maintainer: "This is reasonable." Modelled on `pufferlib/pufferl.py`
`ensure_drive_binary` (remove `./visualize` if it exists, then `bash scripts/build_ocean.sh visualize local`, raising
`RuntimeError("Failed to build visualize binary for rendering")` if the build fails) and `PuffeRL.__init__`
(`if self.render: ensure_drive_binary()`), with the DDP policy update of `PuffeRL.train`.

What it does: two ranks start a PPO run of the driving environment with rendering on, in one working directory (made
by rank 0, path broadcast). Each rank builds its vector environment and DDP policy, then constructs the trainer, which
resets the environments (rank 1's first reset loads its map shard 0.6 s longer) and makes sure the visualize binary is
fresh, then collects a rollout and takes a DDP policy-gradient step. The build is a stand-in for `build_ocean.sh`: the
compiler writes the binary in four parts (0.25 s each), then the link step checks the output and marks it executable.

The fix (the issue's guard, accepted by the maintainer): ranks other than 0 go to a barrier and return; rank 0
rebuilds the binary and then reaches the same barrier, so every rank continues once the binary is complete.
"""

import datetime
import os
import shutil
import tempfile
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

BINARY_PARTS, PART_BYTES, PART_SECONDS = 4, 4096, 0.25
MAP_LOAD_SECONDS = {0: 0.0, 1: 0.6}


def build_ocean(target, workdir):
    """Stand-in for `bash scripts/build_ocean.sh visualize local`: returns (returncode, stderr)."""
    out = os.path.join(workdir, target)
    with open(out, "wb") as f:
        for part in range(BINARY_PARTS):
            f.write(bytes([0x7F, 0x45, 0x4C, 0x46]) + bytes(PART_BYTES - 4))
            f.flush()
            time.sleep(PART_SECONDS)
    try:
        size = os.path.getsize(out)
    except FileNotFoundError:
        return 1, f"ld: cannot open output file {target}: No such file or directory"
    if size != BINARY_PARTS * PART_BYTES:
        return 1, f"ld: final link failed: {target}: file truncated ({size} bytes)"
    os.chmod(out, 0o755)
    return 0, ""


def ensure_drive_binary(workdir):
    """Delete existing visualize binary and rebuild it, so it is always up to date with the C code."""
    if dist.is_initialized():
        if dist.get_rank() != 0:
            dist.barrier()
            return
    path = os.path.join(workdir, "visualize")
    if os.path.exists(path):
        print(f"[rank {dist.get_rank()}] Removing existing visualize binary...", flush=True)
        os.remove(path)
    print(f"[rank {dist.get_rank()}] Building visualize binary...", flush=True)
    returncode, stderr = build_ocean("visualize", workdir)
    if returncode != 0:
        print(f"[rank {dist.get_rank()}] Build failed: {stderr}", flush=True)
        raise RuntimeError("Failed to build visualize binary for rendering")
    print(f"[rank {dist.get_rank()}] Successfully built visualize binary", flush=True)
    if dist.is_initialized():
        dist.barrier()


class DriveVecEnv:
    def __init__(self, rank, num_agents=4, obs_dim=6):
        self.rank = rank
        self.num_agents, self.obs_dim = num_agents, obs_dim

    def reset(self, seed):
        time.sleep(MAP_LOAD_SECONDS[self.rank])  # the first reset loads this rank's map shard
        self.generator = torch.Generator().manual_seed(seed + self.rank)

    def rollout(self, steps=8):
        obs = torch.randn(steps, self.num_agents, self.obs_dim, generator=self.generator)
        rewards = torch.randn(steps, self.num_agents, generator=self.generator)
        return obs, rewards


class PuffeRL:
    def __init__(self, config, vecenv, policy):
        self.config, self.vecenv, self.policy = config, vecenv, policy
        vecenv.reset(config["seed"])
        self.render = config["render"]
        if self.render:
            ensure_drive_binary(config["workdir"])
        self.optimizer = torch.optim.Adam(policy.parameters(), lr=config["learning_rate"])
        self.epoch = 0

    def evaluate(self):
        return self.vecenv.rollout()

    def train(self, obs, rewards):
        logits = self.policy(obs.view(-1, obs.shape[-1]))
        actions = logits.argmax(dim=-1)
        logprob = torch.log_softmax(logits, dim=-1).gather(1, actions[:, None]).squeeze(1)
        advantages = rewards.view(-1) - rewards.mean()
        loss = -(logprob * advantages).mean()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.epoch += 1
        return loss.item()


def train(workdir, rank):
    torch.manual_seed(0)
    vecenv = DriveVecEnv(rank)
    policy = DDP(nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3)))
    config = {"render": True, "workdir": workdir, "learning_rate": 3e-3, "seed": 1234}
    pufferl = PuffeRL(config, vecenv, policy)
    for _ in range(2):
        obs, rewards = pufferl.evaluate()
        loss = pufferl.train(obs, rewards)
        if rank == 0:
            print(f"epoch {pufferl.epoch}: policy loss {loss:.4f}", flush=True)
    return pufferl


def worker():
    rank = dist.get_rank()
    workdir = [tempfile.mkdtemp(prefix="pufferdrive_") if rank == 0 else None]
    dist.broadcast_object_list(workdir, src=0)
    try:
        train(workdir[0], rank)
        print(f"[rank {rank}] training done, visualize binary is "
              f"{os.path.getsize(os.path.join(workdir[0], 'visualize'))} bytes", flush=True)
    finally:
        open(os.path.join(workdir[0], f".left{rank}"), "w").close()
        if all(os.path.exists(os.path.join(workdir[0], f".left{r}")) for r in range(dist.get_world_size())):
            shutil.rmtree(workdir[0], ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
