"""Distributed Shampoo (DDP distributor), fixed: every rank calls ``update_params`` and its all-gather on every step.

Source: facebookresearch/optimizers PR #149 ("Fix the bug skipping step if no gradients", 2025; commit 03bfd83):
"this diff removes the skipping logic and add guards on ``torch._foreach_*`` functions ... due to its inabilities
operating on empty lists": ``update_params`` gets the computed search directions if there are gradients, ``()``
otherwise. Modelled on ``distributed_shampoo/distributed_shampoo.py`` ``DistributedShampoo.step`` and
``distributed_shampoo/utils/shampoo_ddp_distributor.py`` ``DDPDistributor``; Shampoo's Kronecker-factored
preconditioner is replaced by a diagonal AdaGrad one, the distribution of the work is Shampoo's (each rank updates
the blocks it owns, every rank all-gathers the updated blocks).

What the item does: a two-stage model (a backbone, and a refiner head that joins the loss from step 3 on) is trained
with DDP (``find_unused_parameters=True``) and the optimizer for six steps on two ranks; rank 1 owns the refiner's
blocks, which get no gradient in the first stage, and still takes part in each step's all-gather (sending its
unchanged blocks).
"""

import datetime

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

MASKED_BLOCKED_GRADS, DISTRIBUTOR, STEP, PRECONDITIONER = "masked_blocked_grads", "distributor", "step", "precond"
STEPS, REFINER_FROM_STEP = 6, 3


class DDPDistributor:
    """Owns a contiguous chunk of the parameter blocks on each rank and all-gathers the updated blocks."""

    def __init__(self, params):
        self._params = list(params)
        rank, world = dist.get_rank(), dist.get_world_size()
        chunk = -(-len(self._params) // world)
        self._owner = [index // chunk for index in range(len(self._params))]
        self._local = [index for index, owner in enumerate(self._owner) if owner == rank]
        self._buffer_numel = max(sum(self._params[i].numel() for i, o in enumerate(self._owner) if o == r)
                                 for r in range(world))
        self._local_dist_buffer = torch.zeros(self._buffer_numel)
        self._global_dist_buffer = torch.zeros(self._buffer_numel * world)
        self._masked = []

    def merge_and_block_gradients(self) -> tuple:
        self._masked = [index for index in self._local if self._params[index].grad is not None]
        return tuple(self._params[index].grad.detach().reshape(-1) for index in self._masked)

    def local_blocked_params(self) -> list:
        return [self._params[index] for index in self._masked]

    def update_params(self, masked_blocked_search_directions: tuple) -> None:
        with torch.no_grad():
            for index, direction in zip(self._masked, masked_blocked_search_directions):
                self._params[index].add_(direction.view_as(self._params[index]))
            offset = 0
            for index in self._local:
                numel = self._params[index].numel()
                self._local_dist_buffer[offset:offset + numel] = self._params[index].reshape(-1)
                offset += numel
            self.all_gather_into_tensor()
            for owner in range(dist.get_world_size()):
                offset = owner * self._buffer_numel
                for index, block_owner in enumerate(self._owner):
                    if block_owner == owner:
                        numel = self._params[index].numel()
                        self._params[index].copy_(
                            self._global_dist_buffer[offset:offset + numel].view_as(self._params[index]))
                        offset += numel

    def all_gather_into_tensor(self) -> None:
        dist.all_gather_into_tensor(self._global_dist_buffer, self._local_dist_buffer)


class DistributedShampoo(torch.optim.Optimizer):
    def __init__(self, params, lr=0.1, epsilon=1e-8):
        super().__init__(params, {"lr": lr, "epsilon": epsilon})
        self._per_group_state_lists = [{DISTRIBUTOR: DDPDistributor(group["params"]), STEP: 0, PRECONDITIONER: {}}
                                       for group in self.param_groups]

    @torch.no_grad()
    def _compute_search_directions(self, state_lists, group) -> tuple:
        directions = []
        for param, grad in zip(state_lists[DISTRIBUTOR].local_blocked_params(), state_lists[MASKED_BLOCKED_GRADS]):
            accumulator = state_lists[PRECONDITIONER].setdefault(id(param), torch.zeros_like(grad))
            accumulator.add_(grad * grad)
            directions.append(-group["lr"] * grad / (accumulator.sqrt() + group["epsilon"]))
        return tuple(directions)

    @torch.no_grad()
    def step(self, closure=None):
        for state_lists, group in zip(self._per_group_state_lists, self.param_groups):
            state_lists[MASKED_BLOCKED_GRADS] = state_lists[DISTRIBUTOR].merge_and_block_gradients()
            state_lists[STEP] += 1
            state_lists[DISTRIBUTOR].update_params(
                masked_blocked_search_directions=self._compute_search_directions(state_lists, group)
                # Only update parameters if there are gradients to use
                if state_lists[MASKED_BLOCKED_GRADS]
                else ()
            )


class TwoStageModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = torch.nn.Linear(6, 6)
        self.refiner = torch.nn.Linear(6, 1)

    def forward(self, features, use_refiner: bool):
        hidden = torch.tanh(self.backbone(features))
        out = hidden.mean(dim=1, keepdim=True)
        if use_refiner:
            out = out + self.refiner(hidden)
        return out


def worker():
    torch.manual_seed(0)
    module = TwoStageModel()
    model = DDP(module, find_unused_parameters=True)
    optimizer = DistributedShampoo(module.parameters(), lr=0.05)
    generator = torch.Generator().manual_seed(dist.get_rank())
    for step in range(STEPS):
        features, targets = torch.randn(8, 6, generator=generator), torch.randn(8, 1, generator=generator)
        loss = torch.nn.functional.mse_loss(model(features, use_refiner=step >= REFINER_FROM_STEP), targets)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    if dist.get_rank() == 0:
        print(f"trained {STEPS} steps, last loss {loss.item():.4f}")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
