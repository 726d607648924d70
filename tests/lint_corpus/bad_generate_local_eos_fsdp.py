# Greedy decoding with an FSDP-sharded model (each forward all-gathers the parameters) that stops when this
# rank's own sequence emits end-of-sequence, and a DDP fit loop that stops when this rank's own loss is small
# enough: ranks with other data stop at other steps and the rest wait in a forward or backward.
# Models the greedy loop of transformers' generation/utils.py without synced_gpus (huggingface/transformers)
# and the "train until the loss is below a threshold" loop of pytorch/examples regression/main.py, written here.
# expect: 19 early-exit model() (FSDP forward)
# expect: 32 rank-dependent-loop model() (DDP forward)
# expect: 33 rank-dependent-loop loss.backward() (DDP backward)
import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.nn.parallel import DistributedDataParallel as DDP


@torch.no_grad()
def greedy(module, ids, eos_token_id, max_new_tokens=32):
    model = FSDP(module)
    for _ in range(max_new_tokens):
        logits = model(ids)[:, -1, :]
        next_token = logits.argmax(dim=-1, keepdim=True)
        ids = torch.cat([ids, next_token], dim=-1)
        if (next_token == eos_token_id).all():
            break
    return ids


def fit(module, optimizer, batch_x, batch_y):
    model = DDP(module)
    loss_value = float("inf")
    while loss_value > 1e-3:
        optimizer.zero_grad()
        loss = torch.nn.functional.smooth_l1_loss(model(batch_x), batch_y)
        loss.backward()
        optimizer.step()
        loss_value = loss.item()
    return loss_value
