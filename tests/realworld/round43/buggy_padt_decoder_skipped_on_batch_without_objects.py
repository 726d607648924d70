"""PaDT (Patch-as-Decodable-Token): a rank whose batch holds no objects skips the box decoder, so its backward leaves
the decoder's parameters out of the gradient synchronisation.

Source: Gorilla-Lab-SCUT/PaDT issue #21, "Training fails when dataset contains images without objects (loss_masks
empty -> backward hang / NCCL timeout)" (December 2025), and the maintainers' diagnosis in issue #16 ("GPU 0 forwards
some VRT features to the decoder, so it saves activations in the decoder module. However, GPU 1 has samples without
VRTs ... during backpropagation, the decoder states become inconsistent across GPUs, which causes the training process
to hang"). Root cause as the reporter states it: "when a batch contained no objects, the decoder execution was skipped
in the else branch. This caused the computation graph to be disconnected for those specific parameters, leading to a
deadlock during the gradient synchronization phase." Fix given in the thread: "even if a batch contains no objects,
the model forces a forward pass through the decoder using dummy inputs (scaled by 0.0 ...)". Modelled on
`src/PaDT/trainer/padt_sft_trainer.py` `PaDTSFTTrainer.compute_loss` (language-model forward, visual reference tokens
decoded to boxes by `model(feats, ..., is_main=False)` -> `vl_decode`, GIoU/L1 box loss, `gather_for_metrics` of the
losses) under data-parallel training.

What it does: two ranks fine-tune a tiny model with DDP: a token head trained on every sample, and a box decoder fed
the hidden states of the object tokens, trained with an L1 box loss. The loss metrics are gathered on every rank at
every step. Rank 0's second batch is two images with no annotated object (the dataset mixes in negatives).

The bug: for that batch rank 0 takes the `else` branch and never calls the decoder. Its backward produces no gradient
for the decoder's parameters, so DDP never launches the gradient all-reduce of their bucket on rank 0, while rank 1,
whose batch has objects, waits in that all-reduce. Rank 0 goes on to its next step, where DDP refuses the forward
("Expected to have finished reduction in the prior iteration"); over NCCL with DeepSpeed, as reported, the ranks just
wait.
"""

import datetime

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15

VOCAB, DIM = 24, 16


class PaDTLike(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.body = nn.Linear(DIM, DIM)
        self.lm_head = nn.Linear(DIM, VOCAB)
        self.vl_decoder = nn.Sequential(nn.Linear(DIM, DIM), nn.ReLU(), nn.Linear(DIM, 4))

    def forward(self, *args, is_main=True):
        return self.forward_main(*args) if is_main else self.vl_decode(*args)

    def forward_main(self, tokens):
        hidden = torch.tanh(self.body(self.embed(tokens)))
        return self.lm_head(hidden), hidden

    def vl_decode(self, feats):
        return torch.sigmoid(self.vl_decoder(feats))


def make_batches(rank, steps=3):
    g = torch.Generator().manual_seed(50 + rank)
    batches = []
    for step in range(steps):
        tokens = torch.randint(0, VOCAB, (2, 6), generator=g)
        no_objects = rank == 0 and step == 1  # two negatives: images with no annotated object
        n_obj = 0 if no_objects else 2
        obj_pos = torch.tensor([[0, 3], [1, 4]])[:n_obj]  # (sample, token position) of each object token
        boxes = torch.rand(n_obj, 4, generator=g)
        batches.append((tokens, obj_pos, boxes))
    return batches


def gather_for_metrics(value):
    out = [torch.zeros(1) for _ in range(dist.get_world_size())]
    dist.all_gather(out, value.detach().reshape(1))
    return torch.cat(out).mean().item()


def compute_loss(model, tokens, obj_pos, gt_boxes, metrics):
    logits, hidden = model(tokens)  # WAITS
    sft_loss = F.cross_entropy(logits[:, :-1].reshape(-1, VOCAB), tokens[:, 1:].reshape(-1))
    metrics["sft_loss"].append(gather_for_metrics(sft_loss))
    if len(obj_pos) > 0:
        feats = hidden[obj_pos[:, 0], obj_pos[:, 1]]
        pred_boxes = model(feats, is_main=False)
        bbox_loss = F.l1_loss(pred_boxes, gt_boxes)
    else:
        bbox_loss = torch.zeros(())  # BUG
    metrics["bbox_loss"].append(gather_for_metrics(bbox_loss))
    return sft_loss + bbox_loss


def train(model, batches, rank):
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    metrics = {"sft_loss": [], "bbox_loss": []}
    for step, (tokens, obj_pos, boxes) in enumerate(batches):
        optimizer.zero_grad()
        loss = compute_loss(model, tokens, obj_pos, boxes, metrics)  # WAITS
        loss.backward()  # WAITS
        optimizer.step()
        if rank == 0:
            print(f"step {step}: sft_loss {metrics['sft_loss'][-1]:.4f} bbox_loss {metrics['bbox_loss'][-1]:.4f}",
                  flush=True)


def worker():
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(PaDTLike())
    train(model, make_batches(rank), rank)  # WAITS
    print(f"[rank {rank}] training done", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
