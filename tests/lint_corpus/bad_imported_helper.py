# The collectives live in a helper module next to the script, and only rank 0 calls them.
# expect: 11 hidden-collective save_and_sync -> dist.barrier
# expect: 12 hidden-collective corpus_helpers.average -> dist.all_reduce
import torch.distributed as dist
import corpus_helpers
from corpus_helpers import save_and_sync


def train_step(state, loss):
    if dist.get_rank() == 0:
        save_and_sync(state, "ckpt.pt")
        corpus_helpers.average(loss)
