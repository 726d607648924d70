"""Round 22: the missing pad token set inside the main process's "save the tokenizer" block.

Models: the fine-tuning scripts that fix a tokenizer without a pad token with ``tokenizer.pad_token =
tokenizer.eos_token`` (trl issue #466, FastChat issue #718 -- a ``torch.distributed.run --nproc_per_node=2`` run --,
transformers issue #22312), the ``ValueError: Asking to pad but the tokenizer does not have a padding token`` that
``PreTrainedTokenizerBase.pad`` raises, ``DataCollatorWithPadding`` (pads to the longest sequence of each batch),
and the "save tokenizer/config to ``output_dir`` on the main process" block of HF example scripts
(``if accelerator.is_main_process: tokenizer.save_pretrained(...)``).  The tokenizer is a small stand-in with the
same pad-token rule.

What it does: two processes fine-tune a small DDP model.  Before training the main process writes the tokenizer to
the output dir; each rank then tokenises its shard batch by batch with a padding collator.

The bug: the pad-token fix sits inside the main-process block, next to ``save_pretrained`` (so that the saved
tokenizer has it).  Rank 1's tokenizer keeps ``pad_token = None``.  Its first batch has equal lengths and needs no
padding, so both ranks train a step; on the second batch rank 1's collator raises ``ValueError`` while rank 0 waits
for it in the second step's forward (DDP rebuilds its buckets there, a broadcast).
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

KIND = "buggy"
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
    if is_main:
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token  # BUG
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
        loss = nn.functional.mse_loss(model(ids, mask), target)  # WAITS
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
        train(tokenizer, rank)  # WAITS
        dist.barrier()
    finally:
        if rank == 0:
            shutil.rmtree(box[0], ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
