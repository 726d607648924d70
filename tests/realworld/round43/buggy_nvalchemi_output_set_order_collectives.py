"""ALCHEMI Toolkit (NVIDIA/nvalchemi-toolkit): domain-decomposed dynamics consolidate their outputs in the iteration
order of a Python `set`, so each rank issues the per-output collectives in its own order.

Source: NVIDIA/nvalchemi-toolkit PR #143, "fix distributed deadlock that comes up in npt" (July 2026): the NPT example
`06_mace_npt_distributed` hung under `DomainParallel`, ranks issuing `ALLTOALL_BASE` and `ALLREDUCE` at the same NCCL
sequence number. Root cause named in the PR: the model output dict is seeded from a set
(`BaseModelMixin.output_data()` returns `active_outputs & supported`), "whose iteration order is randomized per process
(Python string-hash seed)"; output consolidation issues one collective per key -- an `all_reduce` for per-graph
outputs (energy, stress) and a halo reverse exchange (`all_to_all`) for per-atom outputs (forces) -- "so each rank
issued those collectives in a different order". Modelled on the output seeding in `BaseModelMixin` and the per-kind
consolidation of `nvalchemi/distributed/spec.py` (`OutputSpec`, `OutputKind.PER_GRAPH` / `PER_NODE`).

What it does: a periodic chain of 8 atoms is split into two domains; each rank computes a pair potential over the
atoms it owns plus one ghost atom on each side, then consolidates every requested output: per-graph quantities are
all-reduced, per-atom contributions computed on ghost atoms are sent back to their owners with `all_to_all_single`.
NPT asks for stress (and here a dipole) next to forces, energies and charges.

The bug: the output dict is built from `active_outputs & supported` and `consolidate` walks it as built. Every torchrun
worker is a fresh interpreter with its own string-hash seed, so the two ranks walk the keys in different orders; at
the first position where they differ one rank all-reduces while the other exchanges halos, and both wait out the
timeout (the marked line is the walk the PR changes; the set it walks is built in `PairPotentialModel.__call__`).
"""

import datetime

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15

PER_GRAPH, PER_NODE = "per_graph", "per_node"
OUTPUT_SPEC = {
    "energy": PER_GRAPH,
    "stress": PER_GRAPH,
    "dipole": PER_GRAPH,
    "forces": PER_NODE,
    "atomic_energies": PER_NODE,
    "charges": PER_NODE,
}
N_ATOMS, BOX = 8, 8.0


class Domain:
    """Atoms [rank*4, rank*4+4) are owned; the first atom of the next domain is this rank's ghost (bonds are
    counted by the rank that owns their left atom, so the bond across the boundary is computed here)."""

    def __init__(self, rank, world_size):
        per = N_ATOMS // world_size
        self.rank, self.world_size = rank, world_size
        self.owned = list(range(rank * per, (rank + 1) * per))
        self.ghost = (self.owned[-1] + 1) % N_ATOMS
        self.next_rank = (rank + 1) % world_size
        self.prev_rank = (rank - 1) % world_size

    def reverse_exchange(self, local):
        """Send the contribution computed on the ghost atom back to the rank that owns it (halo reverse exchange)."""
        n_owned = len(self.owned)
        send_counts = [1 if r == self.next_rank else 0 for r in range(self.world_size)]
        recv_counts = [1 if r == self.prev_rank else 0 for r in range(self.world_size)]
        recv = torch.zeros_like(local[n_owned:])
        dist.all_to_all_single(recv, local[n_owned:].contiguous(), recv_counts, send_counts)  # WAITS
        owned = local[:n_owned].clone()
        owned[0] += recv[0]  # our first atom is the previous rank's ghost
        return owned


class PairPotentialModel:
    supported = frozenset(OUTPUT_SPEC)

    def __init__(self, active_outputs):
        self.active_outputs = set(active_outputs)

    def output_data(self):
        return self.active_outputs & self.supported

    def __call__(self, positions, domain):
        atoms = domain.owned + [domain.ghost]
        x = positions[atoms].clone().requires_grad_(True)
        bond_energies = []
        for i in range(len(domain.owned)):
            d = x[i + 1] - x[i]
            d = d - BOX * torch.round(d / BOX)
            inv = 1.0 / d.norm()
            bond_energies.append(4.0 * (inv ** 12 - inv ** 6))
        bonds = torch.stack(bond_energies)
        per_atom_energy = torch.cat([bonds / 2, torch.zeros(1)]) + torch.cat([torch.zeros(1), bonds / 2])
        energy = bonds.sum()
        forces = -torch.autograd.grad(energy, x)[0]
        charges = 0.1 * torch.tensor([(-1.0) ** a for a in atoms])
        charges[-1] = 0.0  # the ghost's charge is counted by its owner
        values = {
            "energy": energy.detach().reshape(1),
            "stress": (x.detach().T @ forces / BOX ** 3).reshape(-1),
            "dipole": (charges[:, None] * x.detach()).sum(0),
            "forces": forces,
            "atomic_energies": per_atom_energy.detach(),
            "charges": charges,
        }
        outputs = dict.fromkeys(self.output_data())  # seeded from a set: its order is this process's
        for key in outputs:
            outputs[key] = values[key]
        return outputs


def consolidate(outputs, domain):
    for key, value in list(outputs.items()):  # BUG
        if OUTPUT_SPEC[key] == PER_GRAPH:
            dist.all_reduce(value)  # WAITS
        else:
            outputs[key] = domain.reverse_exchange(value)  # WAITS
    return outputs


def npt_step(model, positions, domain, rank):
    outputs = model(positions, domain)
    print(f"[rank {rank}] outputs built in the order {list(outputs)}", flush=True)
    outputs = consolidate(outputs, domain)  # WAITS
    pressure = -outputs["stress"].view(3, 3).diagonal().mean()
    return outputs, pressure


def worker():
    rank, world_size = dist.get_rank(), dist.get_world_size()
    domain = Domain(rank, world_size)
    positions = torch.stack([torch.tensor([1.0 * a + 0.05 * (a % 3), 0.1 * (a % 2), 0.0]) for a in range(N_ATOMS)])
    model = PairPotentialModel(["energy", "forces", "stress", "atomic_energies", "charges", "dipole"])
    for step in range(2):
        outputs, pressure = npt_step(model, positions, domain, rank)  # WAITS
        all_forces = [torch.zeros(len(domain.owned), 3) for _ in range(world_size)]
        dist.all_gather(all_forces, outputs["forces"].contiguous())
        positions = positions + 0.001 * torch.cat(all_forces)
        if rank == 0:
            print(f"step {step}: energy {outputs['energy'].item():.5f} pressure {pressure.item():.5f}", flush=True)
    print(f"[rank {rank}] NPT run finished", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
