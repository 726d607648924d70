"""sparsify with ``--distribute_modules``: the dataset is sharded over the ranks without making the number of examples
divisible by the world size, so one rank has one more batch and waits alone at the very last step in the hook's
activation all-gather -- EleutherAI/sparsify issue #68, fixed by PR #94.

Models: EleutherAI/sparsify issue #68 ("Parallel Training getting stuck": "Training appears to complete, but the
program just hangs" at 13907/13908 steps; issue #27: "all the training got stuck at the exact last step") and PR #94
("fix: hang when the number of examples is indivisible across processes": "Fix the `distribute_modules` bug by
ensuring the number of examples is divisible by world size"). Code modelled (written here, not copied):
``sparsify/trainer.py`` -- ``Trainer.distribute_modules`` (each rank trains the SAEs of its share of the hookpoints),
the forward hook that, with ``distribute_modules``, all-gathers every hookpoint's activations
(``dist.all_gather_into_tensor``) so the owning rank gets the whole batch, the per-batch loop and the final
``save()`` (rank 0 writes, then a barrier); ``sparsify/__main__.py`` -- ``dataset.shard(world_size, rank)`` of the
tokenized dataset. Stand-ins: a two-layer base model with two hookpoints, a TopK SAE per hookpoint, 13 examples
(7 + 6 after sharding, batch 2: 4 and 3 batches).

Rank 1 finishes its 3 batches and waits in ``save()``'s barrier; rank 0's 4th batch waits in the first hook's
all-gather. 2 ranks.
"""

import datetime
import os
import shutil
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15

HOOKPOINTS = ["layers.0", "layers.1"]


class TopKSae(nn.Module):
    def __init__(self, d_in, num_latents=16, k=4):
        super().__init__()
        self.encoder = nn.Linear(d_in, num_latents)
        self.decoder = nn.Linear(num_latents, d_in)
        self.k = k

    def forward(self, x):
        pre = F.relu(self.encoder(x))
        top = pre.topk(self.k, dim=-1)
        latents = torch.zeros_like(pre).scatter(-1, top.indices, top.values)
        recon = self.decoder(latents)
        return (recon - x).pow(2).sum() / (x - x.mean(0)).pow(2).sum()  # fraction of variance unexplained


class SaeTrainer:
    def __init__(self, base, save_dir):
        rank, world = dist.get_rank(), dist.get_world_size()
        per_rank = len(HOOKPOINTS) // world
        self.module_plan = [HOOKPOINTS[i : i + per_rank] for i in range(0, len(HOOKPOINTS), per_rank)]
        self.local = self.module_plan[rank]
        torch.manual_seed(1)
        self.saes = {name: TopKSae(8) for name in self.local}
        self.optimizer = torch.optim.Adam([p for sae in self.saes.values() for p in sae.parameters()], lr=1e-3)
        self.base, self.save_dir, self.rank = base, save_dir, rank
        self.fvu = {}

    def hook(self, name):
        def fn(module, inputs, outputs):
            world_outputs = outputs.new_empty([dist.get_world_size() * outputs.shape[0], *outputs.shape[1:]])
            dist.all_gather_into_tensor(world_outputs, outputs.contiguous())  # WAITS
            if name in self.saes:
                with torch.enable_grad():
                    fvu = self.saes[name](world_outputs.flatten(0, 1))
                    fvu.backward()
                self.fvu[name] = fvu.item()

        return fn

    def fit(self, batches):
        handles = [self.base.get_submodule(name).register_forward_hook(self.hook(name)) for name in HOOKPOINTS]
        steps = 0
        for batch in batches:
            self.fvu.clear()
            self.optimizer.zero_grad()
            with torch.no_grad():
                self.base(batch)  # WAITS
            self.optimizer.step()
            steps += 1
        for h in handles:
            h.remove()
        self.save()  # WAITS
        return steps

    def save(self):
        os.makedirs(self.save_dir, exist_ok=True)
        for name, sae in self.saes.items():
            torch.save(sae.state_dict(), os.path.join(self.save_dir, f"{name}.pt"))
        dist.barrier()  # WAITS


class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(32, 8)
        self.layers = nn.ModuleList([nn.Linear(8, 8), nn.Linear(8, 8)])

    def forward(self, tokens):
        h = self.embed(tokens)
        for layer in self.layers:
            h = torch.tanh(layer(h))  # WAITS
        return h


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    save_dir = os.path.join(tempfile.gettempdir(), f"r36_sparsify_{os.environ.get('MASTER_PORT', '0')}")
    torch.manual_seed(0)
    base = Base()
    examples = torch.randint(0, 32, (13, 5), generator=torch.Generator().manual_seed(3))
    per, extra = divmod(len(examples), world)
    start = rank * per + min(rank, extra)
    dataset = examples[start : start + per + (1 if rank < extra else 0)]  # BUG
    batches = [dataset[i : i + 2] for i in range(0, len(dataset), 2)]
    trainer = SaeTrainer(base, save_dir)
    steps = trainer.fit(batches)  # WAITS
    fvu = ", ".join(f"{k} {v:.3f}" for k, v in trainer.fvu.items())
    print(f"[rank {rank}] {steps} steps on {len(dataset)} examples, last FVU {fvu}, SAEs saved", flush=True)
    dist.barrier()
    if rank == 0:
        shutil.rmtree(save_dir, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
