# Each rank evaluates in a background process (multiprocessing, fork: the default on Linux) so that training
# can go on; the evaluator all-reduces its metric with the other ranks' evaluators, as the training loop does.
import multiprocessing as mp
import sys

import torch
import torch.distributed as dist


def evaluate(rank):
    acc = torch.tensor([0.5 + rank])
    dist.all_reduce(acc)  # line 12: average the metric over ranks
    print("acc", acc.item() / dist.get_world_size(), flush=True)


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    kind = sys.argv[1] if len(sys.argv) > 1 else "process"
    if kind == "process":
        p = mp.get_context("fork").Process(target=evaluate, args=(rank,))
        p.start()
        p.join()  # line 23
    else:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(1, mp_context=mp.get_context(kind.split("-")[1])) as pool:
            pool.submit(evaluate, rank).result()  # line 28
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
