"""bergson (EleutherAI): every rank calls the export of the optimizer's second moments to ``optimizer.pt``; the
export gathers the sharded moments on every rank and only rank 0 writes -- the fix of EleutherAI/bergson PR #376.

Models: EleutherAI/bergson PR #376 ("fix: call save_second_moments_as_optimizer_pt from every rank": "Gathering FSDP's
sharded (DTensor) moments is a collective, so gating the call on `global_rank == 0` hangs non-zero ranks. The function
already restricts the file write to rank 0"; CHANGELOG v0.17.0). Code modelled (written here, not copied):
``bergson/utils/load_from_optimizer.py`` -- ``save_second_moments_as_optimizer_pt`` (every moment ``nu`` gathered to a
full tensor, the file written by rank 0), and the MAGIC pipeline that trains, exports the moments, then computes the
query gradients with an all-reduce (stand-ins: a sharded AdamW written here whose second moments are ``DTensor``s
sharded over a 1-D CPU device mesh, as FSDP2 keeps them; a small MLP; data-parallel gradients averaged with
``all_reduce``).

Both ranks gather every moment, then both reach the query-gradient all-reduce. 2 ranks.
"""

import datetime
import os
import shutil
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Shard

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15


class ShardedAdamW:
    """AdamW whose second moments live sharded (dim 0) across the mesh, as FSDP2's optimizer state does."""

    def __init__(self, params, mesh, lr=1e-2, betas=(0.9, 0.999), eps=1e-8):
        self.params, self.mesh, self.lr, self.betas, self.eps = list(params), mesh, lr, betas, eps
        self.step_count = 0
        self.nu = []
        for p in self.params:
            full = torch.zeros(p.numel())
            local = full.chunk(mesh.size())[mesh.get_local_rank()].clone()
            self.nu.append(DTensor.from_local(local, mesh, [Shard(0)], run_check=False))

    def step(self):
        self.step_count += 1
        rank, size = self.mesh.get_local_rank(), self.mesh.size()
        for p, nu in zip(self.params, self.nu):
            grad_shard = p.grad.reshape(-1).chunk(size)[rank]
            local = nu.to_local()
            local.mul_(self.betas[1]).add_((1 - self.betas[1]) * grad_shard ** 2)
            denom = (local / (1 - self.betas[1] ** self.step_count)).sqrt() + self.eps
            update = torch.zeros(p.numel())
            update.chunk(size)[rank].copy_(grad_shard / denom)
            dist.all_reduce(update)
            with torch.no_grad():
                p.add_(-self.lr * update.view_as(p))


def save_second_moments_as_optimizer_pt(model, optimizer, path):
    """Every rank gathers each moment (a collective); rank 0 writes the file."""
    names = [name for name, _ in model.named_parameters()]
    state = {}
    for idx, (name, nu) in enumerate(zip(names, optimizer.nu)):
        full = nu.full_tensor()
        state[idx] = {"exp_avg_sq": full.view_as(optimizer.params[idx]).clone(), "param_name": name}
    if dist.get_rank() == 0:
        torch.save({"state": state, "param_groups": [{"params": list(state), "betas": optimizer.betas}]}, path)
    return len(state)


def compute_query_gradients(model, queries):
    model.zero_grad()
    F.mse_loss(model(queries[0]), queries[1]).backward()
    flat = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
    dist.all_reduce(flat)
    return flat / dist.get_world_size()


def run_magic(model, optimizer, batches, queries, save_dir):
    for x, y in batches:
        model.zero_grad()
        F.mse_loss(model(x), y).backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= dist.get_world_size()
        optimizer.step()
    os.makedirs(save_dir, exist_ok=True)
    n = save_second_moments_as_optimizer_pt(model, optimizer, os.path.join(save_dir, "optimizer.pt"))
    if dist.get_rank() == 0:
        print(f"[rank 0] exported {n} second moments", flush=True)
    return compute_query_gradients(model, queries)


def worker():
    rank = dist.get_rank()
    mesh = init_device_mesh("cpu", (dist.get_world_size(),))
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 2))
    optimizer = ShardedAdamW(model.parameters(), mesh)
    gen = torch.Generator().manual_seed(20 + rank)
    batches = [(torch.randn(16, 6, generator=gen), torch.randn(16, 2, generator=gen)) for _ in range(3)]
    queries = (torch.randn(4, 6, generator=torch.Generator().manual_seed(99)), torch.zeros(4, 2))
    save_dir = os.path.join(tempfile.gettempdir(), f"r35_bergson_{os.environ.get('MASTER_PORT', '0')}", "step_3.ckpt")
    query_grad = run_magic(model, optimizer, batches, queries, save_dir)
    print(f"[rank {rank}] query gradient norm {query_grad.norm():.4f}", flush=True)
    dist.barrier()
    if rank == 0:
        saved = torch.load(os.path.join(save_dir, "optimizer.pt"))
        print(f"[rank 0] optimizer.pt: {len(saved['state'])} entries, "
              f"first {saved['state'][0]['param_name']} {tuple(saved['state'][0]['exp_avg_sq'].shape)}", flush=True)
        shutil.rmtree(os.path.dirname(save_dir), ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
