# The same decoding and fit loops, agreed across ranks: a finished rank keeps calling the forward, and every
# rank leaves when an all_reduce of the "finished" flag says every rank is done; the fit loop tests the
# all-reduced mean loss, the same on every rank.
# Models transformers' generate(synced_gpus=True) (`this_peer_finished` all-reduced in
# `_has_unfinished_sequences`, huggingface/transformers generation/utils.py), written here.
# expect: none
import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.nn.parallel import DistributedDataParallel as DDP


@torch.no_grad()
def greedy(module, ids, eos_token_id, max_new_tokens=32):
    model = FSDP(module)
    this_peer_finished = False
    for _ in range(max_new_tokens):
        logits = model(ids)[:, -1, :]
        if this_peer_finished:
            continue
        next_token = logits.argmax(dim=-1, keepdim=True)
        ids = torch.cat([ids, next_token], dim=-1)
        if (next_token == eos_token_id).all():
            this_peer_finished = True
        unfinished = torch.tensor(0.0 if this_peer_finished else 1.0)
        dist.all_reduce(unfinished)
        if unfinished.item() == 0.0:
            break
    return ids


def fit(module, optimizer, batch_x, batch_y):
    model = DDP(module)
    mean_loss = torch.tensor(float("inf"))
    while mean_loss.item() > 1e-3:
        optimizer.zero_grad()
        loss = torch.nn.functional.smooth_l1_loss(model(batch_x), batch_y)
        loss.backward()
        optimizer.step()
        mean_loss = loss.detach().clone()
        dist.all_reduce(mean_loss)
        mean_loss /= dist.get_world_size()
    return mean_loss.item()
