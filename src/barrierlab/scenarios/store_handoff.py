"""Hand a file over with a store key: rank 0 sets the key when the file is ready, the others wait for the key."""

import json
import os
import time
from datetime import timedelta

import torch.distributed as dist

from barrierlab import span
from barrierlab.scenarios import shared_folder, torchrun_main


def build_vocab():
    """Rank 0's slow preparation (0.3 s), recorded as the span "build vocab"."""
    with span("build vocab"):
        time.sleep(0.3)  # stands in for a slow scan of the corpus
    return {word: i for i, word in enumerate(["<pad>", "<unk>", "barrier", "rank", "store"])}


def scenario(folder=None, timeout=30.0):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    folder = shared_folder(folder)
    # A FileStore needs no server: any process that sees this folder can use it, in the group or not.
    store = dist.FileStore(os.path.join(folder, "handoff.store"), world_size)
    path = os.path.join(folder, "vocab.json")
    if rank == 0:
        vocab = build_vocab()
        with span("write file", kind="io"):
            with open(path + ".tmp", "w") as f:
                json.dump(vocab, f)
            os.replace(path + ".tmp", path)  # readers see the whole file or none of it
        store.set("vocab ready", path)  # the signal: only after the file is complete
        with span("rank 0 goes on"):
            time.sleep(0.1)
    else:
        with span("store.wait(['vocab ready'])", kind="wait"):
            store.wait(["vocab ready"], timedelta(seconds=timeout))
        with span("read file", kind="io"):
            with open(store.get("vocab ready").decode()) as f:
                vocab = json.load(f)
    return len(vocab)


if __name__ == "__main__":
    torchrun_main(scenario)
