# Rank 0 calls helpers that do not synchronise; the barrier is outside.
# expect: none
import torch
import torch.distributed as dist


def log_metrics(step, metrics):
    print(f"step {step}: " + ", ".join(f"{k}={v:.4f}" for k, v in metrics.items()))


def save_checkpoint(model, path):
    torch.save(model.state_dict(), path)


def end_of_epoch(model, step, metrics, rank):
    if rank == 0:
        log_metrics(step, metrics)
        save_checkpoint(model, f"step_{step}.pt")
    dist.barrier()
