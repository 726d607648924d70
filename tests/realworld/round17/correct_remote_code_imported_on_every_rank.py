"""Rank 0 fetches a ``trust_remote_code`` tokenizer's code; every rank imports it before the object is broadcast.

Models: huggingface/transformers ``dynamic_module_utils.py`` (``get_class_from_dynamic_module`` fetches the code file
into ``HF_MODULES_CACHE``, ``init_hf_modules`` puts the cache on ``sys.path``, the class is imported with
``importlib`` in every process that loads the model); the ``broadcast_object_list`` docstring (objects are pickled on
the source and unpickled on the other ranks). The script is a learner's DDP text classifier whose main process
builds the tokenizer (its vocabulary) once and shares it.

What it does: 3 ranks. Rank 0 makes the modules cache (``tempfile.mkdtemp``) and broadcasts its path, then writes
the tokenizer's code file into it (a stand-in for the Hub download); after a barrier every rank imports
``CharTokenizer`` from the cache; rank 0 builds the tokenizer from the training texts and broadcasts the object with
``broadcast_object_list``. Every rank encodes its shard and trains a small ``EmbeddingBag`` classifier under DDP for
3 epochs; rank 0 removes the cache at the end.

Why it is correct: an object is broadcast only to ranks that can import its class: the import runs on every rank
after the barrier that orders it behind rank 0's write.
"""
import datetime
import importlib
import os
import shutil
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 3
TIMEOUT = 20

TOKENIZER_CODE = '''
class CharTokenizer:
    """The repo's custom tokenizer (tokenization_char.py)."""

    def __init__(self, texts):
        self.vocab = ["<unk>"] + sorted(set("".join(texts)))
        self.stoi = {c: i for i, c in enumerate(self.vocab)}

    def __len__(self):
        return len(self.vocab)

    def encode(self, text):
        return [self.stoi.get(c, 0) for c in text]
'''

TEXTS = ["great movie", "terrible plot", "loved the acting", "boring and long", "a fine film", "awful sound",
         "superb cast", "weak ending", "charming story", "dull scenes", "brilliant score", "poor pacing"]
LABELS = [1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0]


def fetch_remote_code(modules_cache):
    """Stand-in for downloading the repo's code into HF_MODULES_CACHE/transformers_modules/<repo>/."""
    pkg = os.path.join(modules_cache, "r17_remote_modules")
    os.makedirs(pkg, exist_ok=True)
    open(os.path.join(pkg, "__init__.py"), "w").close()
    with open(os.path.join(pkg, "tokenization_char.py"), "w") as f:
        f.write(TOKENIZER_CODE)


def get_class_from_dynamic_module(modules_cache, module_name, class_name):
    if modules_cache not in sys.path:
        sys.path.insert(0, modules_cache)  # init_hf_modules
    importlib.invalidate_caches()
    return getattr(importlib.import_module(module_name), class_name)


class TextClassifier(nn.Module):
    def __init__(self, vocab_size):
        super().__init__()
        self.bag = nn.EmbeddingBag(vocab_size, 16)
        self.fc = nn.Linear(16, 2)

    def forward(self, ids, offsets):
        return self.fc(self.bag(ids, offsets))


def encode_batch(tokenizer, texts):
    ids = [torch.tensor(tokenizer.encode(t)) for t in texts]
    offsets = torch.tensor([0] + [len(i) for i in ids[:-1]]).cumsum(0)
    return torch.cat(ids), offsets


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    paths = [tempfile.mkdtemp(prefix="r17_hf_modules_") if rank == 0 else None]
    dist.broadcast_object_list(paths, src=0)
    modules_cache = paths[0]
    try:
        if rank == 0:
            fetch_remote_code(modules_cache)
        dist.barrier()  # the code file is in the shared modules cache
        tokenizer_cls = get_class_from_dynamic_module(  # on every rank, as every process of from_pretrained does
            modules_cache, "r17_remote_modules.tokenization_char", "CharTokenizer")
        holder = [tokenizer_cls(TEXTS) if rank == 0 else None]
        dist.broadcast_object_list(holder, src=0)  # every rank can import CharTokenizer now
        tokenizer = holder[0]

        torch.manual_seed(0)
        model = DDP(TextClassifier(len(tokenizer)))
        opt = torch.optim.Adam(model.parameters(), lr=0.05)
        texts, labels = TEXTS[rank::world], torch.tensor(LABELS[rank::world])
        ids, offsets = encode_batch(tokenizer, texts)
        for epoch in range(3):
            loss = F.cross_entropy(model(ids, offsets), labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if rank == 0:
                print(f"epoch {epoch}: loss {loss.item():.3f}", flush=True)
        dist.barrier()
    finally:
        if rank == 0:
            shutil.rmtree(modules_cache, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
