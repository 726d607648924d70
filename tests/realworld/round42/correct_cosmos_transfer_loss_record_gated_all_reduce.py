"""Correct: every rank all-reduces every loss record, sums and count together, whether or not its own logging window
held that kind of batch.

Source: nvidia-cosmos/cosmos-transfer2.5 issue #240 ("[BUG] code for wandb log may introduce a dead lock", 2026-08),
which points at ``cosmos_transfer2/_src/predict2/callbacks/wandb_log.py`` lines 44-56: ``_LossRecord.get_stat`` runs
``dist.all_reduce(avg_loss)`` and ``dist.all_reduce(avg_edm_loss)`` only ``if self.iter_count > 0``. The record's
count is rank-local: ``WandbCallback.on_training_step_end`` adds each step's loss to ``train_image_log`` or
``train_video_log`` depending on ``model.is_image_batch(data_batch)`` on that rank, and at every logging iteration it
calls ``get_stat`` on the image, video and final records and then all-reduces the two unstable counters. A rank whose
logging window held no image batch issues two all-reduces fewer than a rank that saw one; the reporter "got lots of
``[Rank 5] Watchdog caught collective operation timeout``". The trainer (``imaginaire/trainer.py`` ``train``) ends
with ``distributed.barrier()``.

Here two ranks train four iterations (a DDP-style gradient all-reduce per step) and log at the fourth. Rank 0's
batches alternate image/video; rank 1 gets only video batches. Rank 1's six logging all-reduces pair with rank 0's
first six, rank 1 goes on to the end-of-training barrier, and rank 0 waits in its seventh all-reduce (the
image-unstable counter) -- that is the buggy twin.

The issue names the gated lines and gives no patch. The fix here removes the rank-local gate, as the issue asks: each
record all-reduces one tensor holding its loss sum, EDM-loss sum and count, so every rank issues the same
all-reduces, and the average is taken over the global count (0 if no rank saw that kind of batch).
"""

from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

MAX_ITER = 4
LOGGING_ITER = 4


class _LossRecord:
    def __init__(self):
        self.reset()

    def reset(self):
        self.loss = 0
        self.iter_count = 0
        self.edm_loss = 0

    def get_stat(self):
        stats = torch.tensor([float(self.loss), float(self.edm_loss), float(self.iter_count)], dtype=torch.float64)
        dist.all_reduce(stats, op=dist.ReduceOp.SUM)  # every rank, whatever its own count
        loss_sum, edm_sum, count = stats.tolist()
        avg_loss = loss_sum / count if count > 0 else 0
        avg_edm_loss = edm_sum / count if count > 0 else 0
        self.reset()
        return avg_loss, avg_edm_loss


class WandbCallback:
    def __init__(self):
        self.train_image_log = _LossRecord()
        self.train_video_log = _LossRecord()
        self.final_loss_log = _LossRecord()
        self.img_unstable_count = torch.zeros(1)
        self.video_unstable_count = torch.zeros(1)

    def on_training_step_end(self, data_batch, loss, edm_loss, iteration):
        record = self.train_image_log if data_batch["is_image"] else self.train_video_log
        record.loss += loss.detach().float()
        record.iter_count += 1
        record.edm_loss += edm_loss.detach().float()
        self.final_loss_log.loss += loss.detach().float()
        self.final_loss_log.iter_count += 1
        self.final_loss_log.edm_loss += edm_loss.detach().float()

        if iteration % LOGGING_ITER == 0:
            image = self.train_image_log.get_stat()
            video = self.train_video_log.get_stat()
            final = self.final_loss_log.get_stat()
            dist.all_reduce(self.img_unstable_count, op=dist.ReduceOp.SUM)
            dist.all_reduce(self.video_unstable_count, op=dist.ReduceOp.SUM)
            if dist.get_rank() == 0:
                print(f"iteration {iteration}: image {image} video {video} loss {final}")  # wandb.log(info)
            self.img_unstable_count.zero_()
            self.video_unstable_count.zero_()


def training_step(model, data_batch):
    model.zero_grad()
    out = model(data_batch["x"])
    loss = torch.nn.functional.mse_loss(out, data_batch["y"])
    edm_loss = (out - data_batch["y"]).abs().mean()
    loss.backward()
    for p in model.parameters():  # DDP's gradient all-reduce
        dist.all_reduce(p.grad)
        p.grad /= dist.get_world_size()
    with torch.no_grad():
        for p in model.parameters():
            p -= 0.05 * p.grad
    return loss, edm_loss


def batches(rank):
    g = torch.Generator().manual_seed(rank)
    for i in range(MAX_ITER):
        is_image = rank == 0 and i % 2 == 0  # rank 0 mixes images and videos, rank 1 draws only videos
        yield {"is_image": is_image, "x": torch.randn(4, 3, generator=g), "y": torch.randn(4, 1, generator=g)}


def train(model, callback, rank):
    iteration = 0
    for data_batch in batches(rank):
        loss, edm_loss = training_step(model, data_batch)
        iteration += 1
        callback.on_training_step_end(data_batch, loss, edm_loss, iteration)
    dist.barrier()
    return iteration


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    iterations = train(model, WandbCallback(), rank)
    print(f"rank {rank}: done after {iterations} iterations")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
