"""Modelled on huggingface/transformers ``examples/pytorch/text-classification/run_glue_no_trainer.py`` (the label
list is ``raw_datasets["train"].unique("label")``, sorted, and ``num_labels = len(label_list)`` sizes the
classification head), here run after datasets' ``split_dataset_by_node`` so that each rank sees only its shard,
and on torch's check in the DDP constructor (``_verify_param_shape_across_processes``, the "DDP expects same model
across all ranks" error of e.g. Kent0n-Li/ChatDoctor issue #49 and yifan123/flow_grpo issue #245, there from
other causes).

The bug: each rank builds the label list from its own shard. A rare label ('cancel') is in rank 1's shard only,
so rank 1's head has 4 outputs and rank 0's has 3 (and the two ranks would give the same id to different labels
if the counts happened to match). DDP's constructor compares the parameter shapes across ranks: rank 1 raises
("params[1] in this process with sizes [4, 16] appears not to match sizes of the same param in process 0"),
rank 0 passes the check and waits in the constructor's broadcast of the parameters until rank 1's exit closes the
connection.

Correct twin: ``correct_label_list_broadcast_before_ddp`` (rank 0 reads the whole split and broadcasts the list).
"""

from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

KIND = "buggy"
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


def build_label_list(dataset):
    return sorted({example["label"] for example in dataset})


def main(rank, world_size):
    shard = split_dataset_by_node(load_train_split(), rank, world_size)
    label_list = build_label_list(shard)  # BUG
    label2id = {label: i for i, label in enumerate(label_list)}

    torch.manual_seed(0)
    model = DDP(BagOfWordsClassifier(num_labels=len(label_list)))  # WAITS
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
    main(dist.get_rank(), dist.get_world_size())  # WAITS


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
