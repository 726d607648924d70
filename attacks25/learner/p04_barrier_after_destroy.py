# "cleanup" first, then a barrier "so every rank finishes together".
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    print("training on rank", dist.get_rank())
    dist.destroy_process_group()
    dist.barrier()
    print("done")


if __name__ == "__main__":
    main()
