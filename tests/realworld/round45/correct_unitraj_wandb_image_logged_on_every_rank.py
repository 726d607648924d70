"""UniTraj (fixed): the validation step logs its prediction image on local rank 0, the rank that has the wandb run.

Source: vita-epfl/UniTraj PR #23 ("multi-GPU training will crash due to wandb logging image on another rank"),
`unitraj/models/base_model/base_model.py` (`validation_step` -> `log_info` -> `wandb.log({"prediction":
[wandb.Image(img)]})`). The Lightning wandb logger initialises the run on the global-zero process only, so on the
other ranks the call raises `wandb.errors.Error: You must call wandb.init() before wandb.log()`: "switch from single
gpu to multi-gpu will trigger the following issue". The failing rank leaves validation; rank 0 goes on to the
epoch-end metric all-reduce and waits for it.

Here (gloo, CPU, 2 ranks) a small `Wandb` object stands in for the wandb module (its `log` raises the same error
before `init`), and the validation epoch ends with the `sync_dist` all-reduce of the summed minADE. This is the fix
the PR gives, in the form the maintainer asked for: `if self.local_rank == 0 and status == 'val' and batch_idx == 0:`.
"""

import datetime

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15


class WandbError(Exception):
    pass


class Wandb:
    """The calls of the wandb module the item uses: a run exists only after `init`."""

    def __init__(self):
        self.run = None
        self.history = []

    def init(self, project: str):
        self.run = project

    def log(self, data: dict):
        if self.run is None:
            raise WandbError("You must call wandb.init() before wandb.log()")
        self.history.append(data)


class BaseModel(torch.nn.Module):
    def __init__(self, local_rank: int, wandb: Wandb):
        super().__init__()
        self.local_rank = local_rank
        self.wandb = wandb
        self.head = torch.nn.Linear(4, 2)

    def log_info(self, batch, batch_idx, prediction, status="train"):
        if self.local_rank == 0 and status == "val" and batch_idx == 0:
            img = prediction.detach().numpy().tolist()  # the plotted trajectories
            self.wandb.log({"prediction": [img]})

    def validation_step(self, batch, batch_idx):
        prediction = self.head(batch)
        self.log_info(batch, batch_idx, prediction, status="val")
        return float((prediction - 1.0).norm(dim=-1).mean())


def validate(model: BaseModel, batches) -> float:
    total = torch.zeros(2)
    with torch.no_grad():
        for batch_idx, batch in enumerate(batches):
            total += torch.tensor([model.validation_step(batch, batch_idx), 1.0])
    dist.all_reduce(total)
    return float(total[0] / total[1])


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    wandb = Wandb()
    if rank == 0:
        wandb.init(project="unitraj")  # the logger's experiment exists on global zero only
    model = BaseModel(local_rank=rank, wandb=wandb)
    batches = [torch.randn(3, 4) + rank for _ in range(3)]
    min_ade = validate(model, batches)
    print(f"[rank {rank}] val minADE {min_ade:.4f}, logged {len(wandb.history)} images")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
