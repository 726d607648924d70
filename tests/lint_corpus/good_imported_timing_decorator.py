# A decorator from the same helper module that only times the call (corpus_imaginaire_dist.timed): every
# rank runs the function, so its all_reduce is matched everywhere.
# expect: none
import torch.distributed as dist

from corpus_imaginaire_dist import timed


@timed
def average_loss(loss):
    dist.all_reduce(loss)
    return loss / dist.get_world_size()
