"""Round 22: the missing pad token set on every rank, the tokenizer saved by the main process.

Models: the fine-tuning scripts that fix a tokenizer without a pad token with ``tokenizer.pad_token =
tokenizer.eos_token`` (trl issue #466, FastChat issue #718 -- a ``torch.distributed.run --nproc_per_node=2`` run --,
transformers issue #22312), the ``ValueError: Asking to pad but the tokenizer does not have a padding token`` that
``PreTrainedTokenizerBase.pad`` raises, ``DataCollatorWithPadding`` (pads to the longest sequence of each batch),
and the "save tokenizer/config to ``output_dir`` on the main process" block of HF example scripts
(``if accelerator.is_main_process: tokenizer.save_pretrained(...)``).  The tokenizer is a small stand-in with the
same pad-token rule.

What it does: two processes fine-tune a small DDP model.  Before training the main process writes the tokenizer to
the output dir; each rank then tokenises its shard batch by batch with a padding collator.

This is the correct twin: the pad token is set on every rank before the main-process block, which only saves, so
every rank's collator can pad and both ranks train three steps.
"""
import json
import os
import shutil
import tempfile
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20


class ToyTokenizer:
    """Stand-in for a GPT-2/Llama-style tokenizer: it has an eos token but no pad token."""

    def __init__(self):
        self.vocab = {"</s>": 1}
        self.eos_token = "</s>"
        self.pad_token = None

    def _id(self, word):
        return self.vocab.setdefault(word, 2 + sum(map(ord, word)) % 60)

    def encode(self, text):
        return [self._id(w) for w in text.split()] + [self.vocab[self.eos_token]]

    def pad(self, encoded):
        longest = max(len(e) for e in encoded)
        if any(len(e) < longest for e in encoded) and self.pad_token is None:
            raise ValueError(
                "Asking to pad but the tokenizer does not have a padding token. Please select a token to use as "
                "`pad_token` `(tokenizer.pad_token = tokenizer.eos_token e.g.)`"
            )
        pad_id = self.vocab.get(self.pad_token, 0)
        ids = torch.tensor([e + [pad_id] * (longest - len(e)) for e in encoded])
        mask = torch.tensor([[1] * len(e) + [0] * (longest - len(e)) for e in encoded])
        return ids, mask

    def save_pretrained(self, out_dir):
        with open(os.path.join(out_dir, "tokenizer_config.json"), "w") as f:
            json.dump({"eos_token": self.eos_token, "pad_token": self.pad_token}, f)


SHARDS = {
    0: [["a b c", "d e f"], ["g h", "i j k l"], ["m n o", "p q r"]],
    1: [["s t u", "v w x"], ["y z", "a c e g"], ["b d f", "h j l"]],
}


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(64, 8)
        self.head = nn.Linear(8, 1)

    def forward(self, ids, mask):
        h = (self.emb(ids) * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True)
        return self.head(h).squeeze(-1)


def setup_tokenizer(out_dir, is_main):
    tokenizer = ToyTokenizer()
    if tokenizer.pad_token is None:  # on every rank: every rank's collator pads
        tokenizer.pad_token = tokenizer.eos_token
    if is_main:
        tokenizer.save_pretrained(out_dir)
    dist.barrier()
    return tokenizer


def train(tokenizer, rank):
    torch.manual_seed(0)
    model = DDP(Regressor())
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step, texts in enumerate(SHARDS[rank]):
        ids, mask = tokenizer.pad([tokenizer.encode(t) for t in texts])
        target = mask.sum(1).float()
        loss = nn.functional.mse_loss(model(ids, mask), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0:
            print(f"step {step}: loss {loss.item():.4f}", flush=True)


def worker():
    rank = dist.get_rank()
    box = [tempfile.mkdtemp(prefix="r22_padtok_") if rank == 0 else None]
    dist.broadcast_object_list(box, src=0)
    try:
        tokenizer = setup_tokenizer(box[0], rank == 0)
        train(tokenizer, rank)
        dist.barrier()
    finally:
        if rank == 0:
            shutil.rmtree(box[0], ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
