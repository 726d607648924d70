"""Promise (docs/reference.md, lint: "the idioms that are not rank-dependent" are known; 0 = nothing found): the
causes of a05's false alarms, each cut down to a few lines of the published code it comes from. Each snippet is
correct (every rank makes the same collectives); held if lint finds nothing in each.
 a. nanoGPT: `ddp = int(os.environ.get('RANK', -1)) != -1` (true on every rank) then `n //= world_size` under it.
 b. nanoGPT: rank 0 makes out_dir and only rank 0 writes into it (lint: "the other ranks use a path inside it").
 c. torchtitan: `if seed is None: broadcast(...)` with a config seed, a rank offset added to `seed` only later.
 d. Lightning Fabric: MNIST(download=fabric.is_global_zero) inside rank_zero_first: the flag does not change the
    data set's length, and setup_dataloaders pads every rank's share.
 e. Lightning Fabric: trainers (ranks != 0) set up DDP on a group without rank 0 (DDPStrategy(process_group=pg))."""

import os
import subprocess
import sys
import tempfile

from _common import PY, env

SNIPPETS = {
    "a_rank_env_presence": """
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

steps = 40
ddp = int(os.environ.get("RANK", -1)) != -1
if ddp:
    dist.init_process_group("gloo")
    world_size = int(os.environ["WORLD_SIZE"])
    steps //= world_size
model = DDP(torch.nn.Linear(2, 2))
for micro_step in range(steps):
    model(torch.ones(1, 2)).sum().backward()
""",
    "b_master_folder_master_writes": """
import os
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
master_process = dist.get_rank() == 0
out_dir = "out"
if master_process:
    os.makedirs(out_dir, exist_ok=True)
step = 0
while True:
    if step % 5 == 0 and master_process:
        torch.save({"step": step}, os.path.join(out_dir, "ckpt.pt"))
    step += 1
    if step > 10:
        break
""",
    "c_seed_offset_after_broadcast": """
import torch
import torch.distributed as dist

def set_determinism(seed, rank_in_pp):
    if seed is None:
        seed_tensor = torch.get_rng_state()[:8]
        dist.broadcast(seed_tensor, src=0)
        seed = seed_tensor.view(torch.int64).item()
    seed += rank_in_pp
    torch.manual_seed(seed)
""",
    "d_download_flag": """
import torch
from lightning.fabric import Fabric
from torchvision.datasets import MNIST

fabric = Fabric()
with fabric.rank_zero_first(local=False):
    train_dataset = MNIST("data", download=fabric.is_global_zero, train=True)
train_loader = fabric.setup_dataloaders(torch.utils.data.DataLoader(train_dataset, batch_size=64))
model, optimizer = fabric.setup(torch.nn.Linear(784, 10), torch.optim.SGD([torch.zeros(1)], lr=0.1))
for data, target in train_loader:
    loss = model(data.flatten(1)).sum()
    fabric.backward(loss)
""",
    "e_subgroup_ddp": """
import torch
import torch.distributed as dist
from lightning.fabric import Fabric
from lightning.fabric.strategies import DDPStrategy

def trainer(pg):
    fabric = Fabric(strategy=DDPStrategy(process_group=pg), accelerator="cpu")
    model, optimizer = fabric.setup(torch.nn.Linear(2, 2), torch.optim.SGD([torch.zeros(1)], lr=0.1))

def main():
    dist.init_process_group("gloo")
    pg = dist.new_group(ranks=list(range(1, dist.get_world_size())))
    if dist.get_rank() == 0:
        pass  # the player: collects experience
    else:
        trainer(pg)
""",
}

bad = []
with tempfile.TemporaryDirectory(prefix="a23-lint-") as tmp:
    for name, code in SNIPPETS.items():
        path = os.path.join(tmp, name + ".py")
        with open(path, "w") as f:
            f.write(code.lstrip())
        p = subprocess.run(
            [PY, "-m", "barrierlab", "lint", path], capture_output=True, text=True, env=env(), timeout=60
        )
        heads = [l for l in p.stdout.splitlines() if l.startswith(path)]
        print(f"{name}: rc={p.returncode}" + "".join("\n   " + h.replace(path, name) for h in heads))
        if p.returncode != 0:
            bad.append(name)
print("false alarms in:", bad or "none")
sys.exit(1 if bad else 0)
