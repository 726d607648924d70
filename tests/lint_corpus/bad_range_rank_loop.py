# Toy example from a tutorial: rank r all_reduces r + 2 times.
# expect: 12 rank-dependent-loop dist.all_reduce
import torch
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    t = torch.ones(1)
    for _ in range(rank + 2):
        dist.all_reduce(t)
    print(rank, t.item())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
