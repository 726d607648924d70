# The collate_fn pads every batch to the longest sequence ON ANY RANK, so that shapes agree for a later
# all_gather: it all-reduces the local max length (fork workers, persistent, as on Linux by default).
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader


def pad_collate(items):
    longest = torch.tensor([max(len(x) for x in items)])
    dist.all_reduce(longest, op=dist.ReduceOp.MAX)  # line 10
    return torch.stack([torch.nn.functional.pad(x, (0, int(longest) - len(x))) for x in items])


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    data = [torch.ones(1 + (i + rank) % 5) for i in range(8)]
    loader = DataLoader(data, batch_size=4, num_workers=2, collate_fn=pad_collate, persistent_workers=True)
    for batch in loader:  # line 19
        print(batch.shape)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
