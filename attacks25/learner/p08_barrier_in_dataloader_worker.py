# A dataset that "waits for the others" in __getitem__, loaded with worker processes.
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset


class Shards(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        dist.barrier()
        return torch.tensor([i])


def main():
    dist.init_process_group("gloo")
    loader = DataLoader(Shards(), batch_size=2, num_workers=1)
    for batch in loader:
        print(dist.get_rank(), batch.tolist())
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
