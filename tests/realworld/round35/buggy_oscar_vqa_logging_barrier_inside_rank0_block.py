"""Oscar (microsoft) VQA fine-tuning: the evaluate-during-training block is entered only by ``local_rank in [-1, 0]``,
so the ``barrier()`` meant for the other ranks inside it is never reached and rank 0 waits alone in its own.

Models: microsoft/Oscar PR #196 ("fix the deadlock issue when using distributed training in vqa finetune": "The main
process with local_rank 0 will wait forever because other process will not call torch.distributed.barrier()") and PR
#197 ("the process with local_rank!=0 will not call torch.distributed.barrier() and cause a deadlock"). Code modelled
(written here, not copied): ``oscar/run_vqa.py`` -- ``train()``: after each optimizer step, ``if args.local_rank in
[-1, 0] and args.logging_steps > 0 and global_step % args.logging_steps == 0:`` with, inside it, ``if args.local_rank
not in [-1, 0]: torch.distributed.barrier()``, rank 0's ``evaluate(...)`` (best score kept), ``if args.local_rank ==
0: torch.distributed.barrier()`` (stand-ins: a DDP-wrapped VQA classifier over pooled region features and question
embeddings, ``instance_bce_with_logits``, ``compute_score_with_logits``, an evaluation on rank 0 with the DDP model
under ``no_grad`` -- the model has no buffers, so DDP's forward there makes no collective).

The bug: at ``global_step`` 2 rank 0 evaluates and waits in its barrier; rank 1 never enters the block and is in the
third step's DDP backward. 2 ranks.
"""

import argparse
import datetime
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15


class VQAClassifier(nn.Module):
    def __init__(self, img_dim=10, q_dim=8, num_labels=5):
        super().__init__()
        self.img_proj = nn.Linear(img_dim, 16)
        self.q_proj = nn.Linear(q_dim, 16)
        self.classifier = nn.Sequential(nn.ReLU(), nn.Linear(16, num_labels))

    def forward(self, img_feats, q_emb):
        return self.classifier(self.img_proj(img_feats).mean(1) * self.q_proj(q_emb))


def instance_bce_with_logits(logits, labels):
    return F.binary_cross_entropy_with_logits(logits, labels) * labels.size(1)


def compute_score_with_logits(logits, labels):
    pred = logits.argmax(1)
    return labels.gather(1, pred.unsqueeze(1)).squeeze(1)


def evaluate(args, model, eval_dataset):
    model.eval()
    score, n = 0.0, 0
    with torch.no_grad():
        for img, q, labels in eval_dataset:
            score += compute_score_with_logits(model(img, q), labels).sum().item()
            n += len(labels)
    return score / n


def train(args, train_dataset, eval_dataset, model):
    model = DDP(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    global_step, best_score, tr_loss = 0, 0.0, 0.0
    for epoch in range(args.num_train_epochs):
        for step, (img, q, labels) in enumerate(train_dataset):
            model.train()
            loss = instance_bce_with_logits(model(img, q), labels)
            loss.backward()  # WAITS
            tr_loss += loss.item()
            optimizer.step()
            model.zero_grad()
            global_step += 1

            if args.local_rank in [-1, 0] and args.logging_steps > 0 and global_step % args.logging_steps == 0:  # BUG
                if args.local_rank not in [-1, 0]:
                    dist.barrier()
                if args.local_rank in [-1, 0] and args.evaluate_during_training:
                    eval_score = evaluate(args, model, eval_dataset)
                    best_score = max(best_score, eval_score)
                    print(f"[rank 0] epoch {epoch} step {global_step}: eval score {eval_score:.3f}", flush=True)
                if args.local_rank == 0:
                    dist.barrier()  # WAITS
    return global_step, tr_loss / global_step, best_score


def make_dataset(seed, n_batches):
    gen = torch.Generator().manual_seed(seed)
    data = []
    for _ in range(n_batches):
        labels = torch.zeros(6, 5)
        labels[torch.arange(6), torch.randint(0, 5, (6,), generator=gen)] = 1.0
        data.append((torch.randn(6, 4, 10, generator=gen), torch.randn(6, 8, generator=gen), labels))
    return data


def worker():
    rank = dist.get_rank()
    args = argparse.Namespace(local_rank=int(os.environ.get("LOCAL_RANK", rank)), logging_steps=2,
                              evaluate_during_training=True, num_train_epochs=2)
    torch.manual_seed(0)
    global_step, loss, best = train(args, make_dataset(60 + rank, 3), make_dataset(7, 2), VQAClassifier())  # WAITS
    print(f"[rank {rank}] global_step {global_step}, average loss {loss:.4f}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
