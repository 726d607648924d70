"""train-llm-from-scratch's SFT script: the final dev evaluation runs on rank 0 alone through the DDP-wrapped model.

Source: FareedKhan-dev/train-llm-from-scratch PR #32 ("fix: multi-GPU (DDP) training hangs in SFT, Reward, DPO",
2026), commit 806659c "fix(ddp): run the SFT and DPO final eval on the unwrapped model"; modelled on
``scripts/train_sft.py`` ``main`` (training loop, periodic ``eval_dev`` + ``reduce_scalar`` on every rank, the final
``if ctx.is_main:`` block) and ``src/post_training/distributed.py`` (``ddp_wrap``, ``reduce_scalar``, ``cleanup``).
The model keeps its causal mask in a registered ``tril`` buffer, as ``src/models/attention.py`` does.

What the item does: a one-block causal language model on random token ids is wrapped in DDP and fine-tuned for six
steps on two ranks, with a dev evaluation on every rank at step 3 whose loss ``reduce_scalar`` averages. After the
loop, rank 0 evaluates on the dev set once more and saves; every rank then calls ``cleanup`` (which only destroys the
process group).

The bug (the PR's words): "the final evaluation runs only on rank 0 (``if ctx.is_main:``) but called the DDP-wrapped
model's forward. That launches an NCCL collective with no peer (the other ranks have already reached ``cleanup()``)".
DDP's forward broadcasts the module buffers from rank 0 before it runs the module; rank 1 has left. With NCCL rank 0
waited out the watchdog; with gloo the broadcast fails on the closed connection.
"""

import datetime

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15

VOCAB, CONTEXT, DIM = 32, 8, 16
TOTAL_STEPS, EVAL_STEPS = 6, 3


class TinyCausalLM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, DIM)
        self.qkv = torch.nn.Linear(DIM, 3 * DIM)
        self.lm_head = torch.nn.Linear(DIM, VOCAB)
        self.register_buffer("tril", torch.tril(torch.ones(CONTEXT, CONTEXT)))

    def forward(self, tokens):
        x = self.embed(tokens)
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = (q @ k.transpose(-2, -1)) / DIM**0.5
        scores = scores.masked_fill(self.tril[: tokens.shape[1], : tokens.shape[1]] == 0, float("-inf"))
        x = x + torch.softmax(scores, dim=-1) @ v
        return self.lm_head(x), None


def sft_loss(logits, tokens):
    return torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, VOCAB), tokens[:, 1:].reshape(-1))


def reduce_scalar(value: float) -> float:
    t = torch.tensor([value], dtype=torch.float32)
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return (t / dist.get_world_size()).item()


@torch.no_grad()
def eval_dev(model, dev_tokens) -> float:
    model.eval()
    logits, _ = model(dev_tokens)  # WAITS
    model.train()
    return sft_loss(logits, dev_tokens).item()


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(TinyCausalLM())
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(rank)
    dev_tokens = torch.randint(0, VOCAB, (4, CONTEXT), generator=torch.Generator().manual_seed(99))
    saved = {}
    model.train()
    for step in range(TOTAL_STEPS):
        tokens = torch.randint(0, VOCAB, (4, CONTEXT), generator=generator)
        optimizer.zero_grad(set_to_none=True)
        logits, _ = model(tokens)
        loss = sft_loss(logits, tokens)
        loss.backward()
        optimizer.step()
        if step > 0 and step % EVAL_STEPS == 0:
            dev = reduce_scalar(eval_dev(model, dev_tokens))
            if rank == 0:
                print(f"  [eval] step {step} | dev_loss {dev:.4f}")
    if rank == 0:
        dev = eval_dev(model, dev_tokens)  # BUG WAITS
        saved = {"model": model.module.state_dict(), "dev_loss": dev}
        print(f"Done SFT. dev_loss {dev:.4f}")
    return saved


def cleanup():
    if dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    cleanup()
