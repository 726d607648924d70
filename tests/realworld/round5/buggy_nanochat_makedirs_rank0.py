"""nanochat-style end of pre-training: the master process samples from the model, then every rank saves its
optimizer shard into a checkpoint directory that only rank 0 creates.

Source: karpathy/nanochat PR #336 ("Fix race condition in save_checkpoint for non-zero ranks"):
nanochat/checkpoint_manager.py ``save_checkpoint`` runs ``os.makedirs(checkpoint_dir, exist_ok=True)`` under
``if rank == 0:`` while every rank ``torch.save``s its optimizer shard (``optim_{step:06d}_rank{rank}.pt``);
"if a non-zero rank reaches ``torch.save`` before rank 0 has created the directory, ``torch.save`` fails with
the 'Parent directory does not exist' error" — at the very end of training. In scripts/base_train.py the last
step first samples a few prompts on the master process only, then calls ``save_checkpoint(...,
rank=ddp_rank)`` on every rank, so rank 0 is the late one. Here: a 2-layer toy GPT in DDP, 3 steps of AdamW on
random tokens, then the master's greedy samples and the save. The fix (the PR's, and the barrier alternative
of pytorch/pytorch PR #196591) orders the directory before the shard writes.

The bug: the directory is created by rank 0 only and nothing orders it before rank 1's write; rank 1 raises
in ``torch.save`` while rank 0 is still sampling.
"""

import json
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 5
VOCAB = 64
NUM_ITERATIONS = 3
PROMPTS = [[1, 5, 9], [2, 7], [3, 3, 8, 1], [4, 6], [5, 1, 2], [6, 6, 6], [7, 2, 9, 4]]


class TinyGPT(torch.nn.Module):
    def __init__(self, dim=32, layers=2):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, dim)
        layer = torch.nn.TransformerEncoderLayer(dim, nhead=2, dim_feedforward=64, batch_first=True)
        self.blocks = torch.nn.TransformerEncoder(layer, layers)
        self.head = torch.nn.Linear(dim, VOCAB)

    def forward(self, idx):
        mask = torch.nn.Transformer.generate_square_subsequent_mask(idx.shape[1])
        return self.head(self.blocks(self.embed(idx), mask=mask, is_causal=True))


@torch.no_grad()
def generate(model, prompt, max_tokens=16):
    tokens = torch.tensor([prompt])
    for _ in range(max_tokens):
        next_token = model(tokens)[:, -1].argmax(dim=-1, keepdim=True)
        tokens = torch.cat([tokens, next_token], dim=1)
    return tokens[0].tolist()


def save_checkpoint(checkpoint_dir, step, model_data, optimizer_data, meta_data, rank=0):
    if rank == 0:
        os.makedirs(checkpoint_dir, exist_ok=True)  # BUG
        torch.save(model_data, os.path.join(checkpoint_dir, f"model_{step:06d}.pt"))
        with open(os.path.join(checkpoint_dir, f"meta_{step:06d}.json"), "w", encoding="utf-8") as f:
            json.dump(meta_data, f, indent=2)
    if optimizer_data is not None:
        torch.save(optimizer_data, os.path.join(checkpoint_dir, f"optim_{step:06d}_rank{rank:d}.pt"))


def worker():
    import r5_common

    rank = dist.get_rank()
    master_process = rank == 0
    torch.manual_seed(0)
    orig_model = TinyGPT()
    model = DDP(orig_model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    checkpoint_dir = os.path.join(r5_common.shared_dir("nanochat"), "base_checkpoints", "d2")
    generator = torch.Generator().manual_seed(rank)
    step = 0
    while True:
        last_step = step == NUM_ITERATIONS
        if master_process and last_step:
            orig_model.eval()
            samples = [generate(orig_model, prompt) for prompt in PROMPTS]
            orig_model.train()
        if last_step:
            save_checkpoint(checkpoint_dir, step, orig_model.state_dict(), optimizer.state_dict(), {"step": step}, rank=rank)
            break
        x = torch.randint(VOCAB, (4, 17), generator=generator)
        loss = F.cross_entropy(model(x[:, :-1]).reshape(-1, VOCAB), x[:, 1:].reshape(-1))
        loss.backward()
        optimizer.step()
        model.zero_grad(set_to_none=True)
        step += 1
    return samples if master_process else None


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
