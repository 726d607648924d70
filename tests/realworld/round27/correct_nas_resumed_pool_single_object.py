"""An evolutionary architecture search resumed from a searcher checkpoint of an earlier run; rank 0 restores a
candidate pool of any size and broadcasts it to the other ranks as one object, in a one-element list.

Models: open-mmlab/mmrazor ``mmrazor/engine/runner/evolution_search_loop.py`` (``EvolutionSearchLoop``:
``_resume`` on rank 0 restores ``candidates`` / ``top_k_candidates`` from ``search_epoch_N.pkl``;
``sample_candidates`` -- rank 0 fills the pool ``while len(self.candidates) < self.num_candidates``, the other
ranks make ``Candidates([None] * self.num_candidates)``, then ``broadcast_object_list(self.candidates.data)``;
``update_candidates_scores`` validates every candidate on every rank); mmrazor PR #153 (its
``broadcast_object_list`` modelled on torch's); open_clip's ``broadcast_object`` (``objects = [obj if rank == src
else None]``, one element on every rank); the ``broadcast_object_list`` docstring.

What it does: 2 ranks search the hidden width and activation of a tiny supernet for 2 epochs; each candidate is
scored by the validation MSE all-reduced over the ranks' shards; top-2 candidates, 2 mutations and 2 crossovers
make the next pool. Before the search, rank 0 writes the searcher checkpoint an earlier run (``num_candidates=6``)
left after epoch 0, and the search resumes from it with ``num_candidates=4``.

Why it is right although it looks rank-dependent: the pool is restored on rank 0 alone and its length (6) differs
from the configured ``num_candidates`` (4), but ``sample_candidates`` broadcasts ``[pool]`` -- a list of length 1
on every rank -- and every rank then scores the same 6 candidates; from epoch 1 on the pool has 4.
"""

import os
import pickle
import random
import shutil
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

WIDTHS = [2, 4, 6, 8]
ACTS = ["relu", "tanh"]


class SuperNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 1)
        self.subnet = {"width": 8, "act": "relu"}

    def set_subnet(self, subnet):
        self.subnet = subnet

    def forward(self, x):
        w = self.subnet["width"]
        h = torch.relu(self.fc1(x)[:, :w]) if self.subnet["act"] == "relu" else torch.tanh(self.fc1(x)[:, :w])
        return h @ self.fc2.weight[:, :w].t() + self.fc2.bias


def sample_subnet(rng):
    return {"width": rng.choice(WIDTHS), "act": rng.choice(ACTS)}


class EvolutionSearchLoop:
    def __init__(self, model, val_x, val_y, num_candidates, top_k=2, num_mutation=2, num_crossover=2,
                 max_epochs=2, resume_from=None):
        self.model, self.val_x, self.val_y = model, val_x, val_y
        self.num_candidates, self.top_k = num_candidates, top_k
        self.num_mutation, self.num_crossover = num_mutation, num_crossover
        self.max_epochs, self.resume_from = max_epochs, resume_from
        self.epoch = 0
        self.candidates = []  # [(subnet, score)]
        self.top_k_candidates = []
        self.rng = random.Random(0)

    def run(self):
        if self.resume_from:
            self._resume()
        while self.epoch < self.max_epochs:
            self.run_epoch()
        return self.top_k_candidates[0]

    def _resume(self):
        if dist.get_rank() == 0:
            with open(self.resume_from, "rb") as f:
                state = pickle.load(f)
            self.candidates = state["candidates"]
            self.top_k_candidates = state["top_k_candidates"]
            print(f"resumed {len(self.candidates)} candidates from {os.path.basename(self.resume_from)}", flush=True)

    def run_epoch(self):
        self.sample_candidates()
        self.update_candidates_scores()
        pool = self.candidates + self.top_k_candidates
        pool.sort(key=lambda c: c[1])
        self.top_k_candidates = pool[: self.top_k]
        if dist.get_rank() == 0:
            print(f"epoch {self.epoch}: top-{self.top_k} {self.top_k_candidates}", flush=True)
        mutations = [(self._mutate(), None) for _ in range(self.num_mutation)]
        crossovers = [(self._crossover(), None) for _ in range(self.num_crossover)]
        self.candidates = mutations + crossovers
        self.epoch += 1

    def sample_candidates(self):
        if dist.get_rank() == 0:
            while len(self.candidates) < self.num_candidates:
                self.candidates.append((sample_subnet(self.rng), None))
        box = [self.candidates if dist.get_rank() == 0 else None]
        dist.broadcast_object_list(box, src=0)
        self.candidates = box[0]

    def update_candidates_scores(self):
        for i, (subnet, _) in enumerate(self.candidates):
            self.model.set_subnet(subnet)
            with torch.no_grad():
                err = ((self.model(self.val_x) - self.val_y) ** 2).sum()
            t = torch.stack([err, torch.tensor(float(len(self.val_y)))])
            dist.all_reduce(t)
            self.candidates[i] = (subnet, round((t[0] / t[1]).item(), 4))

    def _mutate(self):
        parent = dict(self.rng.choice(self.top_k_candidates)[0])
        if self.rng.random() < 0.5:
            parent["width"] = self.rng.choice(WIDTHS)
        else:
            parent["act"] = self.rng.choice(ACTS)
        return parent

    def _crossover(self):
        a, b = self.rng.choice(self.top_k_candidates)[0], self.rng.choice(self.top_k_candidates)[0]
        return {"width": a["width"], "act": b["act"]}


def write_earlier_run_checkpoint(folder):
    """The searcher checkpoint an earlier run (num_candidates=6) saved after epoch 0."""
    rng = random.Random(1)
    candidates = [(sample_subnet(rng), None) for _ in range(6)]
    top_k = [({"width": 8, "act": "relu"}, 2.9), ({"width": 6, "act": "tanh"}, 3.1)]
    path = os.path.join(folder, "search_epoch_1.pkl")
    with open(path, "wb") as f:
        pickle.dump({"candidates": candidates, "top_k_candidates": top_k}, f)
    return path


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = SuperNet()
    g = torch.Generator().manual_seed(100 + rank)
    val_x = torch.randn(16, 4, generator=g)
    val_y = val_x[:, :1] - 0.5 * val_x[:, 1:2]
    folder = tempfile.mkdtemp(prefix="r27_nas_") if rank == 0 else None
    try:
        resume_from = write_earlier_run_checkpoint(folder) if rank == 0 else "search_epoch_1.pkl"
        searcher = EvolutionSearchLoop(model, val_x, val_y, num_candidates=4, resume_from=resume_from)
        best = searcher.run()
        if rank == 0:
            print(f"best subnet {best}", flush=True)
        dist.barrier()
    finally:
        if folder:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
