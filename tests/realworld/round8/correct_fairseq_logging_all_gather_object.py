"""Modelled on the same fairseq Trainer step as ``buggy_fairseq_all_gather_list_max_size``
(facebookresearch/fairseq ``fairseq/trainer.py`` ``_aggregate_logging_outputs``), with the fixed-size
``all_gather_list`` replaced by ``torch.distributed.all_gather_object`` (the size of every rank's pickle is
exchanged first, so no rank can fail a local size check), as the torch docs for ``all_gather_object`` describe
and as later trainers built on fairseq's utilities do.

Looks suspicious, is right: each rank gathers a *nested, rank-specific* list — a different number of logging
dicts per rank, one of them with a long list of hypotheses — and the lengths differ on every step. Every rank
still makes exactly one ``all_gather_object`` per step, and the object's size is not part of the contract.
"""

from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20


class Trainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer

    def _aggregate_logging_outputs(self, logging_outputs):
        gathered = [None] * dist.get_world_size()
        dist.all_gather_object(gathered, logging_outputs)
        return [log for per_rank in gathered for log in per_rank]

    def train_step(self, samples, keep_hypotheses):
        self.optimizer.zero_grad()
        logging_outputs = []
        for x, y in samples:
            loss = torch.nn.functional.mse_loss(self.model(x), y)
            loss.backward()
            log = {"loss": loss.item(), "nsentences": x.shape[0]}
            if keep_hypotheses:
                log["hyps"] = [[f"tok{j}" for j in range(i + 3)] for i in range(x.shape[0])]
            logging_outputs.append(log)
        for p in self.model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= dist.get_world_size()
        self.optimizer.step()
        return self._aggregate_logging_outputs(logging_outputs)


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 1)
    trainer = Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1))
    generator = torch.Generator().manual_seed(100 + rank)
    for step in range(3):
        # A different number of micro-batches (and sentences) per rank: the logging list differs in length.
        n_samples = 1 + (rank + step) % 3
        batch_size = 12 if (rank == 1 and step == 2) else 4
        samples = [(torch.randn(batch_size, 8, generator=generator), torch.randn(batch_size, 1, generator=generator))
                   for _ in range(n_samples)]
        # The number of micro-batches differs, but every rank all-reduces each gradient once per step.
        logs = trainer.train_step(samples, keep_hypotheses=(step == 2))
        nsent = sum(log["nsentences"] for log in logs)
        if rank == 0:
            print(f"step {step}: {len(logs)} logs, {nsent} sentences")
    expected = sum(4 * (1 + (r + 2) % 3) if not (r == 1) else 12 * (1 + (r + 2) % 3) for r in range(2))
    assert nsent == expected, (nsent, expected)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
