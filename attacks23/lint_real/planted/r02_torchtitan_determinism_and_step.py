# Reproduction (shortened) of pytorch/torchtitan @ b5bcd76c6: torchtitan/distributed/utils.py set_determinism
# (rank 0 rolls a seed and broadcasts it when the config gives none; then each rank adds its mesh coordinate)
# and dist_max/dist_mean, with the trainer's step that logs reduced losses at log steps and a DCP save every
# interval on every rank (torchtitan/components/checkpoint.py). PLANTED BUG (lines marked # PLANTED): see the README.
import os

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.distributed.distributed_c10d as c10d


def _dist_reduce(x, reduceOp, mesh):
    if mesh is None:
        return x.item()
    return dist.all_reduce(x, op=getattr(c10d.ReduceOp, reduceOp), group=mesh.get_group()) or x.item()


def dist_max(x, mesh=None):
    return _dist_reduce(x, reduceOp=c10d.ReduceOp.MAX.name, mesh=mesh)


def dist_mean(x, mesh=None):
    return _dist_reduce(x, reduceOp=c10d.ReduceOp.AVG.name, mesh=mesh)


def set_determinism(parallel_dims, device, debug_config, distinct_seed_mesh_dims):
    seed = debug_config.seed
    if parallel_dims.world_size == 1:
        if seed is not None:
            torch.manual_seed(seed)
            os.environ["PYTHONHASHSEED"] = str(seed % 2**32)
        return

    # all ranks agree on a starting seed: the user's, else rank 0 rolls the dice and everyone uses that
    if seed is None:
        seed_tensor = torch.get_rng_state()[:8].to(device)
        torch.distributed.broadcast(seed_tensor, src=0)
        seed = seed_tensor.to("cpu").view(torch.uint64).item()
    assert isinstance(seed, int)

    distinct_seed_meshes = [parallel_dims.get_optional_mesh(dim) for dim in distinct_seed_mesh_dims]
    distinct_seed_meshes = [mesh for mesh in distinct_seed_meshes if mesh is not None]
    if distinct_seed_meshes:
        seed_offset = 0
        cumulative_size = 1
        for distinct_mesh in distinct_seed_meshes:
            local_rank = distinct_mesh.get_local_rank()
            seed_offset += local_rank * cumulative_size
            cumulative_size *= distinct_mesh.size()
        seed += seed_offset
        seed %= 2**64
    torch.manual_seed(seed)
    os.environ["PYTHONHASHSEED"] = str(seed % 2**32)


class Trainer:
    def __init__(self, job_config, parallel_dims, model, optimizer, loss_mesh):
        self.job_config = job_config
        self.parallel_dims = parallel_dims
        self.model = model
        self.optimizer = optimizer
        self.loss_mesh = loss_mesh
        self.step = 0

    def train_step(self, inputs, labels):
        self.optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(self.model(inputs), labels)
        loss.backward()
        self.optimizer.step()
        if self.step % self.job_config.metrics.log_freq == 0:
            global_avg_loss = dist_mean(loss.detach(), self.loss_mesh)
            global_max_loss = dist_max(loss.detach(), self.loss_mesh)
            print(f"step {self.step} loss {global_avg_loss:.4f} max {global_max_loss:.4f}")

    def save(self, curr_step):
        if curr_step % self.job_config.checkpoint.interval != 0:
            return
        checkpoint_id = os.path.join(self.job_config.checkpoint.folder, f"step-{curr_step}")
        if torch.distributed.get_rank() == 0:  # PLANTED: save once
            dcp.save({"model": self.model.state_dict(), "optim": self.optimizer.state_dict()}, checkpoint_id=checkpoint_id)  # PLANTED

    def train(self, data_iterator):
        set_determinism(self.parallel_dims, "cuda", self.job_config.debug, ["pp"])
        while self.step < self.job_config.training.steps:
            self.step += 1
            inputs, labels = next(data_iterator)
            self.train_step(inputs, labels)
            self.save(self.step)
