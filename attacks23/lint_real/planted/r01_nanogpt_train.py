# Reproduction (structure kept, code shortened) of karpathy/nanoGPT train.py @ 3adf61e1: DDP set up from
# torchrun's RANK, rank 0 ("master_process") makes out_dir, evaluates and saves; gradient accumulation steps
# divided by the world size; require_backward_grad_sync toggled instead of no_sync(). PLANTED BUG (lines marked # PLANTED): see the README.
import os
import time

import torch
from torch.distributed import destroy_process_group, init_process_group
from torch.nn.parallel import DistributedDataParallel as DDP

out_dir = "out"
eval_interval = 2000
eval_iters = 200
always_save_checkpoint = True
eval_only = False
gradient_accumulation_steps = 5 * 8
batch_size = 12
max_iters = 600000
device = "cuda"

ddp = int(os.environ.get("RANK", -1)) != -1  # is this a ddp run?
if ddp:
    init_process_group(backend="nccl")
    ddp_rank = int(os.environ["RANK"])
    ddp_local_rank = int(os.environ["LOCAL_RANK"])
    ddp_world_size = int(os.environ["WORLD_SIZE"])
    device = f"cuda:{ddp_local_rank}"
    torch.cuda.set_device(device)
    master_process = ddp_rank == 0  # this process will do logging, checkpointing etc.
    seed_offset = ddp_rank
    assert gradient_accumulation_steps % ddp_world_size == 0
    gradient_accumulation_steps //= ddp_world_size
else:
    master_process = True
    seed_offset = 0
    ddp_world_size = 1

if master_process:
    os.makedirs(out_dir, exist_ok=True)
torch.manual_seed(1337 + seed_offset)


def get_batch(split):
    x = torch.randint(0, 50304, (batch_size, 1024))
    return x, x


model = torch.nn.Linear(8, 8).to(device)
optimizer = torch.optim.AdamW(model.parameters())
if ddp:
    model = DDP(model, device_ids=[ddp_local_rank])
raw_model = model.module if ddp else model


@torch.no_grad()
def estimate_loss():
    out = {}
    model.eval()
    for split in ["train", "val"]:
        losses = torch.zeros(eval_iters)
        for k in range(eval_iters):
            X, Y = get_batch(split)
            logits, loss = model(X, Y)
            losses[k] = loss.item()
        out[split] = losses.mean()
        if ddp:
            torch.distributed.all_reduce(out[split])  # PLANTED: average the eval loss over ranks
            out[split] /= ddp_world_size
    model.train()
    return out


X, Y = get_batch("train")
iter_num = 0
best_val_loss = 1e9
while True:
    if iter_num % eval_interval == 0 and master_process:
        losses = estimate_loss()  # PLANTED (called on the master only)
        print(f"step {iter_num}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}")
        if losses["val"] < best_val_loss or always_save_checkpoint:
            best_val_loss = losses["val"]
            if iter_num > 0:
                checkpoint = {"model": raw_model.state_dict(), "optimizer": optimizer.state_dict(), "iter_num": iter_num}
                print(f"saving checkpoint to {out_dir}")
                torch.save(checkpoint, os.path.join(out_dir, "ckpt.pt"))
    if iter_num == 0 and eval_only:
        break
    for micro_step in range(gradient_accumulation_steps):
        if ddp:
            model.require_backward_grad_sync = micro_step == gradient_accumulation_steps - 1
        logits, loss = model(X, Y)
        loss = loss / gradient_accumulation_steps
        X, Y = get_batch("train")
        loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    iter_num += 1
    if iter_num > max_iters:
        break

if ddp:
    destroy_process_group()
