# Rank 0 asks whether to resume; the others wait at the barrier.
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    resume = False
    if dist.get_rank() == 0:
        resume = input("Resume from checkpoint? [y/N] ").strip() == "y"
    dist.barrier()
    print("resume", resume)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
