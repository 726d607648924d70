"""transformers' Trainer with ``EarlyStoppingCallback``: the variable-length predictions gathered before the metrics.

Models: huggingface/transformers issue #17478 ("Training hangs in the end while calling dist.barrier()"): training
hung in the ``dist.barrier()`` that ``Trainer.train`` runs before loading the best model at the end. The cause, as
the reporter found and confirmed: "my custom model has outputs with variable lengths and I wasn't gathering all
outputs with ``distributed_concat`` function as they are not torch tensors. This results in different metrics in
each process due to different outputs without gathering. In addition, I am using ``EarlyStoppingCallback`` during
my training. As the metrics are different for each process, one process can stop the training and enter
``dist.barrier`` while the others go on training."
Code modelled (written here, not copied): ``trainer.py`` ``Trainer.train`` (evaluate every epoch, stop when
``control.should_training_stop``, then with ``load_best_model_at_end`` a barrier -- PR #10685 -- and the load of
``state.best_model_checkpoint``), ``evaluation_loop`` (tensors gathered with ``distributed_concat``), the
user's ``compute_metrics`` over variable-length predictions, ``trainer_callback.py`` ``EarlyStoppingCallback``
(``early_stopping_patience``), ``_save_checkpoint`` (best-metric bookkeeping, files written by process 0).

The fix modelled is the one the reporter applied and confirmed: the non-tensor outputs (the span lists) are gathered
from every process too (here with ``all_gather_object``, as they have variable lengths) before
``compute_metrics``, so every process computes the same F1 and takes the same early-stopping decision.
2 ranks, a per-token tagger under DDP, patience 1: both ranks see the same F1 every epoch, stop after the same
epoch, meet in the barrier and load the same best checkpoint.
"""

import datetime
import os
import shutil
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

SEQ = 10
VOCAB = 20
NUM_EPOCHS = 8


def output_dir():
    tag = os.environ.get("MASTER_PORT") or str(os.getppid())
    return os.path.join(tempfile.gettempdir(), f"r31_es_{tag}")


def make_split(seed, n):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, VOCAB, (n, SEQ), generator=g)
    tags = ((ids % 5 == 0) | (ids % 7 == 3)).long()
    noise = torch.rand(n, SEQ, generator=g) < 0.1
    return ids, torch.where(noise, 1 - tags, tags)


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 8)
        self.head = nn.Linear(8, 2)

    def forward(self, ids):
        return self.head(torch.tanh(self.emb(ids)))


def spans_of(tag_row):
    return [i for i, t in enumerate(tag_row.tolist()) if t == 1]


def compute_metrics(pred_spans, gold_spans):
    tp = sum(len(set(p) & set(g)) for p, g in zip(pred_spans, gold_spans))
    n_pred = sum(len(p) for p in pred_spans)
    n_gold = sum(len(g) for g in gold_spans)
    precision = tp / max(n_pred, 1)
    recall = tp / max(n_gold, 1)
    return {"eval_f1": 2 * precision * recall / max(precision + recall, 1e-9)}


class EarlyStoppingCallback:
    def __init__(self, early_stopping_patience):
        self.patience = early_stopping_patience
        self.counter = 0
        self.best = None

    def on_evaluate(self, control, metrics):
        value = metrics["eval_f1"]
        if self.best is None or value > self.best:
            self.best = value
            self.counter = 0
        else:
            self.counter += 1
        if self.counter >= self.patience:
            control["should_training_stop"] = True


class Trainer:
    def __init__(self, model, train_split, eval_split, callback):
        self.rank = dist.get_rank()
        self.world = dist.get_world_size()
        self.model = model
        self.optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
        self.train_split = train_split
        self.eval_split = eval_split
        self.callback = callback
        self.best_metric = None
        self.best_model_checkpoint = None

    def distributed_concat(self, tensor):
        output = [torch.zeros_like(tensor) for _ in range(self.world)]
        dist.all_gather(output, tensor)
        return torch.cat(output)

    def evaluation_loop(self):
        ids, tags = self.eval_split
        ids, tags = ids[self.rank :: self.world], tags[self.rank :: self.world]
        with torch.no_grad():
            logits = self.model.module(ids)
        loss = nn.functional.cross_entropy(logits.reshape(-1, 2), tags.reshape(-1)).reshape(1)
        all_losses = self.distributed_concat(loss)
        local = ([spans_of(row) for row in logits.argmax(-1)], [spans_of(row) for row in tags])
        gathered = [None] * self.world
        dist.all_gather_object(gathered, local)
        pred_spans = [spans for preds, _ in gathered for spans in preds]
        gold_spans = [spans for _, golds in gathered for spans in golds]
        metrics = compute_metrics(pred_spans, gold_spans)
        metrics["eval_loss"] = all_losses.mean().item()
        return metrics

    def _save_checkpoint(self, epoch, metrics):
        ckpt = os.path.join(output_dir(), f"checkpoint-{epoch}")
        if self.best_metric is None or metrics["eval_f1"] > self.best_metric:
            self.best_metric = metrics["eval_f1"]
            self.best_model_checkpoint = ckpt
        if self.rank == 0:
            os.makedirs(ckpt, exist_ok=True)
            torch.save(self.model.module.state_dict(), os.path.join(ckpt, "pytorch_model.bin"))

    def train(self):
        ids, tags = self.train_split
        ids, tags = ids[self.rank :: self.world], tags[self.rank :: self.world]
        control = {"should_training_stop": False}
        for epoch in range(1, NUM_EPOCHS + 1):
            for start in range(0, len(ids), 8):
                logits = self.model(ids[start : start + 8])
                loss = nn.functional.cross_entropy(logits.reshape(-1, 2), tags[start : start + 8].reshape(-1))
                loss.backward()
                self.optimizer.step()
                self.optimizer.zero_grad()
            metrics = self.evaluation_loop()
            print(f"[rank {self.rank}] epoch {epoch}: eval_f1 {metrics['eval_f1']:.4f}, "
                  f"eval_loss {metrics['eval_loss']:.4f}", flush=True)
            self.callback.on_evaluate(control, metrics)
            self._save_checkpoint(epoch, metrics)
            if control["should_training_stop"]:
                break
        if self.best_model_checkpoint is not None:
            dist.barrier()
            state = torch.load(os.path.join(self.best_model_checkpoint, "pytorch_model.bin"))
            self.model.module.load_state_dict(state)
            print(f"[rank {self.rank}] loaded best model from {os.path.basename(self.best_model_checkpoint)} "
                  f"(stopped after epoch {epoch})", flush=True)


def worker():
    rank = dist.get_rank()
    if rank == 0:
        shutil.rmtree(output_dir(), ignore_errors=True)
    dist.barrier()
    torch.manual_seed(0)
    model = DDP(Tagger())
    trainer = Trainer(model, make_split(1, 64), make_split(7, 12), EarlyStoppingCallback(early_stopping_patience=1))
    trainer.train()
    dist.barrier()
    if rank == 0:
        shutil.rmtree(output_dir(), ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
