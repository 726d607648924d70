"""RETURNN (PyTorch engine) -- every rank enters the dev-set evaluation and creates the dev data-loader iterator;
only rank 0 evaluates (PR #1461).

Source: rwth-i6/returnn issue #1454 ("multi-gpu training: training hangs after one sub-epoch"; the reporter's
diagnosis: "data loader iterator initialization requires synchronization of all instances (each instance should run
into ``dist.new_group(backend="gloo")`` ...) the next epoch training data loader iterator initialization of those which
didn't need to run evaluations waited and synchronized with the eval data loader initialization of the rank 0
instance"), fixed by PR #1461 (commit ab8521d, "Torch distributed: fix synchronization"). Modelled on
``returnn/torch/engine.py`` before that commit: ``train_epoch`` (``iter(self._train_dataloader)``, a MIN all-reduce of
``_has_data`` before every step, the DDP backward), then ``if not self._use_torch_distributed or
torch.distributed.get_rank() == 0: self.eval_model()``; ``eval_model`` iterates every dev data loader with the plain
(non-DDP) model. RETURNN's datasets reach the ``DataLoader`` as an ``IterDataPipe``, and for those
``torch.utils.data.DataLoader``'s iterator calls ``dist.new_group(backend="gloo")`` and broadcasts a shared seed in it
(``_BaseDataLoaderIter.__init__``, ``_share_dist_seed``) -- as torch 2.13 still does.

What it does: two sub-epochs of DDP training, each followed by the dev-set evaluation.

The fix (PR #1461): ``eval_model()`` is called on every rank; a rank other than 0 creates the dev data loader's
iterator ("We need to make sure the data loader iterator was created for proper synchronization. However, now we only
want to do evaluation on rank 0 for simplicity.") and skips the dataset, so every rank makes the same ``new_group``
calls in the same order.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.datapipes.iter import IterableWrapper

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

NUM_EPOCHS = 2


def make_datasets(rank, world):
    g = torch.Generator().manual_seed(9)
    w = torch.randn(5, 3, generator=g)
    xs = torch.randn(6, 4, 5, generator=g)
    train = [{"data": x, "classes": (x @ w).argmax(-1)} for x in xs][rank::world]  # each rank's share of the corpus
    dev = [{"data": x, "classes": (x @ w).argmax(-1)} for x in torch.randn(2, 4, 5, generator=g)]
    return train, dev


class Engine:
    def __init__(self, model, train_data, eval_datasets):
        self._pt_model = model
        self._ddp_pt_model = DDP(model)
        self._use_torch_distributed = True
        self.optimizer = torch.optim.SGD(self._ddp_pt_model.parameters(), lr=0.1)
        self._train_dataloader = DataLoader(IterableWrapper(train_data), batch_size=None)
        self._eval_dataloaders = {name: DataLoader(IterableWrapper(data), batch_size=None)
                                  for name, data in eval_datasets.items()}
        self.epoch = 0

    def _run_step(self, model, batch):
        logits = model(batch["data"])
        return nn.functional.cross_entropy(logits, batch["classes"])

    def train_epoch(self):
        rank = dist.get_rank()
        data_iter = iter(self._train_dataloader)
        step_idx, total = 0, 0.0
        self._pt_model.train()
        while True:
            with torch.no_grad():
                extern_data_raw = next(data_iter, None)
            _has_data = torch.tensor([extern_data_raw is not None], dtype=torch.int8)
            if self._use_torch_distributed:
                # if at least one worker does not have data, all workers finish this epoch
                dist.all_reduce(_has_data, op=dist.ReduceOp.MIN)
            if not _has_data[0]:
                break
            self.optimizer.zero_grad()
            loss = self._run_step(self._ddp_pt_model, extern_data_raw)
            loss.backward()
            self.optimizer.step()
            total += loss.item()
            step_idx += 1
        print(f"[rank {rank}] ep {self.epoch}: trained {step_idx} steps, train loss {total / max(step_idx, 1):.4f}")

        self.eval_model()

    def eval_model(self):
        self._pt_model.eval()
        for dataset_name, data_loader in self._eval_dataloaders.items():
            if self._use_torch_distributed and dist.get_rank() != 0:
                # We need to make sure the data loader iterator was created for proper synchronization.
                # However, now we only want to do evaluation on rank 0 for simplicity.
                iter(data_loader)
                continue
            total, n = 0.0, 0
            with torch.no_grad():
                for extern_data_raw in data_loader:
                    total += self._run_step(self._pt_model, extern_data_raw).item()
                    n += 1
            print(f"[rank {dist.get_rank()}] ep {self.epoch}: {dataset_name}: score {total / n:.4f}")

    def train(self):
        for epoch in range(1, NUM_EPOCHS + 1):
            self.epoch = epoch
            self.train_epoch()


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    train, dev = make_datasets(rank, world)
    engine = Engine(nn.Linear(5, 3), train, {"dev": dev})
    engine.train()
    print(f"[rank {rank}] finished training")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
