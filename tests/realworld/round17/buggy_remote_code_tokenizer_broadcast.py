"""Rank 0 loads a ``trust_remote_code`` tokenizer class, then broadcasts the object to ranks that cannot import it.

Models: huggingface/transformers ``dynamic_module_utils.py`` (``get_class_from_dynamic_module`` fetches the repo's
code file into ``HF_MODULES_CACHE``, ``init_hf_modules`` puts that cache on ``sys.path`` and the class is imported
with ``importlib`` under a ``transformers_modules.*`` name: the class lives in a module that exists only in the
processes that ran this); the ``broadcast_object_list`` docstring (the objects are pickled on the source rank and
unpickled on the others, which must be able to import the classes they refer to). The script is a learner's DDP
text classifier that builds its tokenizer on the main process only ("no need to download and build it N times")
and hands the finished object to the other ranks.

What it does: 3 ranks. Rank 0 fetches the tokenizer's code file (a stand-in for the Hub download: it writes the
module into a fresh modules cache, ``tempfile.mkdtemp``), imports ``CharTokenizer`` from it the way
``get_class_from_dynamic_module`` does, builds the vocabulary from the training texts and broadcasts the tokenizer
with ``broadcast_object_list``. Every rank then encodes its shard and trains a small ``EmbeddingBag`` classifier
under DDP for 3 epochs.

The bug: only rank 0 has the modules cache on ``sys.path`` and the module imported. Ranks 1 and 2 receive the
pickled tokenizer and fail to unpickle it (``ModuleNotFoundError: No module named 'r17_remote_modules'``, raised
inside ``broadcast_object_list``); rank 0 has already left the broadcast and waits in the DDP constructor for
ranks that are gone. The correct twin broadcasts the cache's path, lets rank 0 fetch, and has every rank import
the class (after a barrier) before the tokenizer object is broadcast.
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

KIND = "buggy"
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
    modules_cache = None
    try:
        holder = [None]
        if rank == 0:
            modules_cache = tempfile.mkdtemp(prefix="r17_hf_modules_")
            fetch_remote_code(modules_cache)
            tokenizer_cls = get_class_from_dynamic_module(
                modules_cache, "r17_remote_modules.tokenization_char", "CharTokenizer")
            holder = [tokenizer_cls(TEXTS)]
        dist.broadcast_object_list(holder, src=0)  # BUG
        tokenizer = holder[0]

        torch.manual_seed(0)
        model = DDP(TextClassifier(len(tokenizer)))  # WAITS
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
        if rank == 0 and modules_cache:
            shutil.rmtree(modules_cache, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
