"""Modelled on fairseq's ``distributed/utils.py`` ``all_gather_list`` (a fixed-size byte buffer, each rank
writes its pickled payload into its own slot, one ``all_reduce`` of the whole buffer) and on the trainer's
``_aggregate_logging_outputs`` -> ``_all_gather_list_sync`` that gathers the per-rank logging outputs every
step (facebookresearch/fairseq ``fairseq/trainer.py``; the "encoded data size exceeds max_size" error and the
``--all-gather-list-size`` option that fairseq added for it).

The bug: the size check runs *before* the collective, on the local payload only. On the step where one rank's
logging outputs (here: per-sentence hypotheses kept for BLEU logging) grow past ``max_size``, that rank raises
``ValueError`` and never enters the ``all_reduce``; the other rank's payload fits, so it enters the
``all_reduce`` and waits for a peer that has left.
"""

import pickle
from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

HEADER = 4  # payload length as a big-endian int32


def all_gather_list(data, group=None, max_size=1024):
    """Gather arbitrary picklable data from every rank (fairseq's fixed-buffer scheme, written anew)."""
    rank = dist.get_rank(group)
    world_size = dist.get_world_size(group)
    buffer_size = max_size * world_size
    if getattr(all_gather_list, "_buffer", None) is None or all_gather_list._buffer.numel() < buffer_size:
        all_gather_list._buffer = torch.zeros(buffer_size, dtype=torch.uint8)
    buffer = all_gather_list._buffer
    buffer.zero_()

    enc = pickle.dumps(data)
    enc_size = len(enc)
    if enc_size + HEADER > max_size:
        raise ValueError(f"encoded data size ({enc_size + HEADER}) exceeds max_size ({max_size})")  # BUG
    header = enc_size.to_bytes(HEADER, "big")
    start = rank * max_size
    buffer[start:start + HEADER] = torch.tensor(list(header), dtype=torch.uint8)
    buffer[start + HEADER:start + HEADER + enc_size] = torch.tensor(list(enc), dtype=torch.uint8)
    dist.all_reduce(buffer[:buffer_size], group=group)  # WAITS

    result = []
    for i in range(world_size):
        out = buffer[i * max_size:(i + 1) * max_size]
        size = int.from_bytes(bytes(out[:HEADER].tolist()), "big")
        result.append(pickle.loads(bytes(out[HEADER:HEADER + size].tolist())))
    return result


class Trainer:
    """The slice of fairseq's Trainer that matters: a train step, then the logging outputs gathered."""

    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer

    def _aggregate_logging_outputs(self, logging_outputs):
        gathered = all_gather_list(logging_outputs)  # WAITS
        return [log for per_rank in gathered for log in per_rank]

    def train_step(self, samples, keep_hypotheses):
        self.optimizer.zero_grad()
        logging_outputs = []
        for x, y in samples:
            loss = torch.nn.functional.mse_loss(self.model(x), y)
            loss.backward()
            log = {"loss": loss.item(), "nsentences": x.shape[0]}
            if keep_hypotheses:
                log["hyps"] = [f"hypothesis {i} " * 8 for i in range(x.shape[0])]
            logging_outputs.append(log)
        for p in self.model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= dist.get_world_size()
        self.optimizer.step()
        return self._aggregate_logging_outputs(logging_outputs)  # WAITS


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 1)
    trainer = Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1))
    generator = torch.Generator().manual_seed(100 + rank)
    for step in range(3):
        # Rank 1's shard has the long validation-style batch (more sentences) on step 2.
        batch_size = 12 if (rank == 1 and step == 2) else 4
        samples = [(torch.randn(batch_size, 8, generator=generator), torch.randn(batch_size, 1, generator=generator))]
        logs = trainer.train_step(samples, keep_hypotheses=(step == 2))  # WAITS
        if rank == 0:
            print(f"step {step}: loss {sum(l['loss'] for l in logs) / len(logs):.4f} from {len(logs)} logs")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
