"""Helper module for the round-9 ZeRO items (not an item): checkpoint helpers written the way training libraries
split them (a ``save_checkpoint`` that assembles the training state, which asks the optimizer for a state dict
it can save). Modelled on pytorch/ignite issue #2623 (a handler that calls ``consolidate_state_dict`` before the
checkpoint handler's ``state_dict()``), open-mmlab/mmengine PR #551 (``ZeroRedundancyOptimizer`` in the
checkpoint hook) and the ``ZeroRedundancyOptimizer.consolidate_state_dict`` docstring ("This needs to be called on
all ranks"). The state dict of a ``ZeroRedundancyOptimizer`` exists only on the rank it was consolidated to.
"""

import os

import torch
import torch.distributed as dist
from torch.distributed.optim import ZeroRedundancyOptimizer


def optimizer_state_for_saving(optimizer, to=0):
    if isinstance(optimizer, ZeroRedundancyOptimizer):
        optimizer.consolidate_state_dict(to=to)  # every rank sends its shard of the state to rank `to`
        if dist.get_rank() != to:
            return None
    return optimizer.state_dict()


def training_state(model, optimizer, step):
    module = getattr(model, "module", model)
    return {"model": module.state_dict(), "optimizer": optimizer_state_for_saving(optimizer), "step": step}


def save_checkpoint(folder, model, optimizer, step):
    state = training_state(model, optimizer, step)
    if state["optimizer"] is not None:  # the consolidating rank writes
        os.makedirs(folder, exist_ok=True)
        torch.save(state, os.path.join(folder, f"step-{step}.pt"))
