"""Modelled on huggingface/transformers ``examples/pytorch/text-classification/run_glue_no_trainer.py`` (the label
list is taken from the whole training split, ``raw_datasets["train"].unique("label")`` then ``sort()``, and
``num_labels = len(label_list)`` sizes the classification head before ``accelerator.prepare``), on datasets'
``split_dataset_by_node`` (each rank keeps its own shard of a streamed data set) and on torch's check in the
DDP constructor (``_verify_param_shape_across_processes``: "DDP expects same model across all ranks").

What it does: a streamed text-classification data set is split by node; each rank sees only its shard. Rank 0
reads the label column of the whole training split (the metadata pass a streaming job does once) and broadcasts
the sorted label list; every rank builds ``label2id`` and a head with ``len(label_list)`` outputs from it, wraps
the model in DDP and trains on its shard.

Why it looks suspicious but is right: the label list is computed on rank 0 only, under ``if rank == 0``, and the
other ranks pass ``None`` to ``broadcast_object_list``; after the broadcast every rank holds the same list, so the
models have the same shapes and the same label ids.
"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

VOCAB = 50


def load_train_split():
    """A tiny intent-classification set; 'cancel' is rare (it lands in one rank's shard only)."""
    generator = torch.Generator().manual_seed(7)
    labels = ["book", "weather", "music", "book", "weather", "cancel", "music", "book",
              "weather", "music", "book", "weather", "music", "book", "weather", "music"]
    return [{"input_ids": torch.randint(0, VOCAB, (6,), generator=generator), "label": label} for label in labels]


def split_dataset_by_node(dataset, rank, world_size):
    return dataset[rank::world_size]


class BagOfWordsClassifier(torch.nn.Module):
    def __init__(self, num_labels):
        super().__init__()
        self.embed = torch.nn.EmbeddingBag(VOCAB, 16)
        self.classifier = torch.nn.Linear(16, num_labels)

    def forward(self, input_ids):
        return self.classifier(self.embed(input_ids))


def build_label_list(train_split, rank):
    label_list = [None]
    if rank == 0:
        label_list = [sorted({example["label"] for example in train_split})]
    dist.broadcast_object_list(label_list, src=0)
    return label_list[0]


def main(rank, world_size):
    train_split = load_train_split()
    label_list = build_label_list(train_split, rank)
    label2id = {label: i for i, label in enumerate(label_list)}
    shard = split_dataset_by_node(train_split, rank, world_size)

    torch.manual_seed(0)
    model = DDP(BagOfWordsClassifier(num_labels=len(label_list)))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for epoch in range(2):
        for start in range(0, len(shard), 4):
            batch = shard[start:start + 4]
            input_ids = torch.stack([example["input_ids"] for example in batch])
            labels = torch.tensor([label2id[example["label"]] for example in batch])
            loss = torch.nn.functional.cross_entropy(model(input_ids), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    if rank == 0:
        print(f"labels {label_list}; last loss {loss.item():.4f}")


def worker():
    main(dist.get_rank(), dist.get_world_size())


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
