"""Helper module of round 28 (not an item): a vocabulary cache -- load it from a JSON file when the file is there,
else build it from the corpus and, on the writer, save it -- as the "tokenize on the main process first, the
others load the cache" recipes do.

Written after reading HF ``datasets`` ``Dataset.map`` caching (the cache file is written by the first process and
loaded by the others inside ``main_process_first``), transformers ``run_clm.py`` / accelerate examples
(``with training_args.main_process_first(desc=...)`` / ``with accelerator.main_process_first():`` around the
preprocessing) and the stdlib ``json.dump``, which streams its output to the file chunk by chunk and raises
``TypeError`` at the first value it cannot encode (a ``set``), leaving what it wrote so far. Nothing here is copied.

``cache_path()`` is the same on every rank of a run; ``build_vocab(corpus)`` returns the vocabulary; ``load_or_build``
raises ``TypeError`` on the writer (the specials are a ``set``) and ``json.JSONDecodeError`` (a ``ValueError``) on a
reader that finds the writer's half-written file.
"""

import json
import os
import tempfile

CORPUS = ["the cat sat", "the dog ran", "a cat ran far", "the end"]


def cache_path():
    run_id = os.environ.get("MASTER_PORT") or str(os.getppid())
    return os.path.join(tempfile.gettempdir(), f"r28_vocab_{run_id}.json")


def build_vocab(corpus=CORPUS):
    tokens = sorted({w for line in corpus for w in line.split()})
    return {"tokens": ["<pad>", "<unk>"] + tokens, "specials": {"<pad>", "<unk>"}}


def load_or_build(path, write):
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    vocab = build_vocab()
    if write:
        with open(path, "w") as f:
            json.dump(vocab, f)  # "specials" is a set: TypeError after "tokens" is on disk
    return vocab
