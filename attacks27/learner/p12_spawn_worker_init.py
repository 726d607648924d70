# Per-worker seeding as in many training repos: the worker_init_fn seeds numpy from the global rank and worker id.
# The loader uses the "spawn" start method (set to avoid fork problems with threads).
import numpy as np
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset


class Squares(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return torch.tensor([float(i * i)])


def seed_worker(worker_id):
    np.random.seed(1000 * dist.get_rank() + worker_id)  # line 18


def main():
    dist.init_process_group("gloo")
    loader = DataLoader(Squares(), batch_size=4, num_workers=1, worker_init_fn=seed_worker,
                        multiprocessing_context="spawn", persistent_workers=True)
    for batch in loader:  # line 25
        dist.all_reduce(batch)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
