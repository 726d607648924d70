# The collectives live in a helper module next to the script and every rank calls them; rank 0 only
# calls the helper that prints.
# expect: none
import corpus_helpers
from corpus_helpers import log_line, save_and_sync


def train_step(state, loss):
    loss = corpus_helpers.average(loss)
    save_and_sync(state, "ckpt.pt")
    if corpus_helpers.dist.get_rank() == 0:
        log_line(f"loss {loss.item():.3f}")
