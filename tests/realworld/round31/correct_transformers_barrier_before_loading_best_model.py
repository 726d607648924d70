"""transformers' Trainer with ``load_best_model_at_end``: a barrier before every process loads the best checkpoint.

Models: huggingface/transformers issue #10666 and PR #10685 ("Distributed barrier before loading model": "a process
might get to that point before process 0 has finished saving the checkpoint that is re-loaded, which would result
in an error"), and issue #12369, where the same race is reported with its error: "When the best model appears in
the last step, the main process needs to save the model ... However, the subprocess may run
``self.model = self.model.from_pretrained(self.state.best_model_checkpoint)`` before the best model is completely
saved", giving "OSError: Error no file named ['pytorch_model.bin', ...] found in directory <best model dir>".
Code modelled (written here, not copied): ``trainer.py`` ``Trainer.train`` of transformers 4.3/4.4 (evaluate and
``_save_checkpoint`` every epoch, ``save_model`` writing on process 0 only, the best checkpoint tracked on every
process, then ``from_pretrained(state.best_model_checkpoint)`` and ``store_flos`` -- whose
``distributed_broadcast_scalars`` all-gathers the FLOs -- at the end), ``modeling_utils.py`` ``save_pretrained`` /
``from_pretrained`` (``config.json`` first, then the weights file; the "no file named" check).

The fix modelled is PR #10685's: in distributed training ``train`` calls ``dist.barrier()`` before loading the best
checkpoint, so no process reads it before process 0 has finished writing it.
2 ranks, a small regression model under DDP, 3 epochs, the last checkpoint the best; rank 0 spends 1.0 s writing
the weights (a stand-in for a large file on a network disk), rank 1 waits for it in the barrier; both load the
best checkpoint, all-gather the FLOs and finish.
"""

import datetime
import json
import os
import shutil
import tempfile
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

NUM_EPOCHS = 3
WEIGHTS_WRITE_SECONDS = 1.0
WEIGHTS_NAME = "pytorch_model.bin"
CONFIG_NAME = "config.json"


def output_dir():
    tag = os.environ.get("MASTER_PORT") or str(os.getppid())
    return os.path.join(tempfile.gettempdir(), f"r31_best_{tag}")


class Regressor(nn.Module):
    config = {"model_type": "toy-regressor", "hidden_size": 16}

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 1))

    def forward(self, x):
        return self.net(x).squeeze(-1)

    def save_pretrained(self, save_directory):
        os.makedirs(save_directory, exist_ok=True)
        with open(os.path.join(save_directory, CONFIG_NAME), "w") as f:
            json.dump(self.config, f)
        time.sleep(WEIGHTS_WRITE_SECONDS)
        torch.save(self.state_dict(), os.path.join(save_directory, WEIGHTS_NAME))

    @classmethod
    def from_pretrained(cls, directory):
        archive = os.path.join(directory, WEIGHTS_NAME)
        if not os.path.isfile(archive):
            raise OSError(f"Error no file named ['{WEIGHTS_NAME}'] found in directory {directory}")
        model = cls()
        model.load_state_dict(torch.load(archive))
        return model


class Trainer:
    def __init__(self, rank, world):
        self.rank, self.world = rank, world
        torch.manual_seed(0)
        self.model = DDP(Regressor())
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.05)
        g = torch.Generator().manual_seed(5)
        self.w = torch.randn(6, generator=g)
        self.train_x = torch.randn(64, 6, generator=g)[rank::world]
        self.eval_x = torch.randn(16, 6, generator=g)[rank::world]
        self.best_metric = None
        self.best_model_checkpoint = None
        self.current_flos = 0.0
        self.total_flos = 0.0

    def is_world_process_zero(self):
        return self.rank == 0

    def evaluate(self):
        with torch.no_grad():
            loss = nn.functional.mse_loss(self.model.module(self.eval_x), self.eval_x @ self.w).reshape(1)
        losses = [torch.zeros(1) for _ in range(self.world)]
        dist.all_gather(losses, loss)
        return {"eval_loss": torch.cat(losses).mean().item()}

    def save_model(self, directory):
        if self.is_world_process_zero():
            self.model.module.save_pretrained(directory)

    def _save_checkpoint(self, epoch, metrics):
        checkpoint = os.path.join(output_dir(), f"checkpoint-{epoch}")
        self.save_model(checkpoint)
        if self.best_metric is None or metrics["eval_loss"] < self.best_metric:
            self.best_metric = metrics["eval_loss"]
            self.best_model_checkpoint = checkpoint

    def store_flos(self):
        flos = torch.tensor([self.current_flos])
        gathered = [torch.zeros(1) for _ in range(self.world)]
        dist.all_gather(gathered, flos)
        self.total_flos += torch.cat(gathered).sum().item()
        self.current_flos = 0.0

    def train(self):
        for epoch in range(1, NUM_EPOCHS + 1):
            for start in range(0, len(self.train_x), 8):
                x = self.train_x[start : start + 8]
                loss = nn.functional.mse_loss(self.model(x), x @ self.w)
                loss.backward()
                self.optimizer.step()
                self.optimizer.zero_grad()
                self.current_flos += 6.0 * 129 * x.shape[0]
            metrics = self.evaluate()
            print(f"[rank {self.rank}] epoch {epoch}: eval_loss {metrics['eval_loss']:.4f}", flush=True)
            self._save_checkpoint(epoch, metrics)
        if self.best_model_checkpoint is not None:
            if self.world > 1:
                dist.barrier()
            print(f"[rank {self.rank}] Loading best model from {self.best_model_checkpoint} "
                  f"(score: {self.best_metric:.4f}).", flush=True)
            best = Regressor.from_pretrained(self.best_model_checkpoint)
            self.model.module.load_state_dict(best.state_dict())
        self.store_flos()
        return self.total_flos


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        shutil.rmtree(output_dir(), ignore_errors=True)
    dist.barrier()
    total_flos = Trainer(rank, world).train()
    print(f"[rank {rank}] train done, total_flos {total_flos:.0f}", flush=True)
    dist.barrier()
    if rank == 0:
        shutil.rmtree(output_dir(), ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
