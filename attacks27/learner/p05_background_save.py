# Training all-reduces a loss every step; a background thread saves a checkpoint after step 2 and then calls
# dist.barrier() "so every rank has saved before training goes on" -- on the same (default) group.
import threading
import time

import torch
import torch.distributed as dist


def save_in_background(step):
    time.sleep(0.01 * dist.get_rank())
    torch.save({"step": step}, f"ckpt_rank{dist.get_rank()}.pt")
    dist.barrier()  # line 13


def main():
    dist.init_process_group("gloo")
    saver = None
    for step in range(40):
        loss = torch.tensor([1.0])
        dist.all_reduce(loss)  # line 21
        if step == 2:
            saver = threading.Thread(target=save_in_background, args=(step,))
            saver.start()
        time.sleep(0.005)
    saver.join()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
