# The barrier is there, but before the save instead of after it.
import torch
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = torch.nn.Linear(4, 4)
    dist.barrier()
    if rank == 0:
        torch.save(model.state_dict(), "ckpt_p12.pt")
    if rank != 0:
        model.load_state_dict(torch.load("ckpt_p12.pt"))
    print(rank, "loaded")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
