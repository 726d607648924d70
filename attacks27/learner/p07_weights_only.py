# Rank 0 saves the run's state (with its config object) and every rank loads it after a barrier. torch >= 2.6
# loads with weights_only=True by default, which refuses the config object.
import dataclasses

import torch
import torch.distributed as dist


@dataclasses.dataclass
class Config:
    lr: float = 0.1


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    if rank == 0:
        torch.save({"weights": torch.ones(3), "config": Config()}, "state.pt")  # line 18
    dist.barrier()  # line 19
    state = torch.load("state.pt")  # line 20
    print(state["config"])
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
