"""transformers' ``run_glue.py`` (2019): evaluation on the master process only reaches the feature cache's barrier.

Models: huggingface/transformers issue #998 ("Running the pytorch.distributed.launch example of Glue hangs at
evaluation"): training finished, then the script hung after "Loading features from cached file
.../cached_dev_bert-base-uncased_128_mrpc", at ``if args.local_rank == 0: torch.distributed.barrier()``. The cause,
as PR #1081 ("Fix distributed barrier hang") explains it: evaluation is done "solely by the master process (cf
L476: ``if args.do_eval and args.local_rank in [-1, 0]:``)", and during it the process "hangs/gets stucked at L290
(``torch.distributed.barrier()``). It turns out that all the processes except the master one already exit at L476
and thus never enter the symmetric ``torch.distributed.barrier()`` at L254-255"; the fix adds ``and not evaluate``
to both barrier conditions.
Code modelled (written here, not copied): ``examples/run_glue.py`` of that time -- ``load_and_cache_examples``
(non-first processes wait in a barrier while the first one builds and caches the features, then the first one
releases them with its own barrier), ``train`` (DDP, ``DistributedSampler``), ``evaluate`` and ``main`` (save and
evaluate under ``local_rank in [-1, 0]``, the other processes leaving).

2 ranks, one node (the local rank is the rank), a bag-of-words classifier on generated sentences: both ranks build
the train features through the barrier pair, train 4 steps, then rank 1 leaves and rank 0 evaluates, loading the dev
features and waiting in the cache barrier for a rank that has gone.
Bug: the barrier condition without ``and not evaluate`` (BUG); waiting: rank 0 in that barrier (WAITS).
"""

import datetime
import os
import random
import shutil
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

VOCAB = ["good", "great", "fine", "bad", "awful", "poor", "movie", "plot", "actor", "the", "a", "very"]
MAX_LEN = 8


class Args:
    def __init__(self):
        self.local_rank = dist.get_rank()
        tag = os.environ.get("MASTER_PORT") or str(os.getppid())
        self.data_dir = os.path.join(tempfile.gettempdir(), f"r31_glue_{tag}")
        self.do_train = True
        self.do_eval = True
        self.train_batch_size = 8
        self.max_steps = 4


def read_examples(evaluate):
    rng = random.Random(7 if evaluate else 3)
    examples = []
    for _ in range(24 if evaluate else 64):
        words = [rng.choice(VOCAB) for _ in range(rng.randint(3, MAX_LEN))]
        label = int(sum(w in ("good", "great", "fine") for w in words) >= sum(w in ("bad", "awful", "poor") for w in words))
        examples.append((words, label))
    return examples


def convert_examples_to_features(examples):
    ids = torch.zeros(len(examples), MAX_LEN, dtype=torch.long)
    for i, (words, _) in enumerate(examples):
        ids[i, : len(words)] = torch.tensor([VOCAB.index(w) + 1 for w in words])
    labels = torch.tensor([label for _, label in examples])
    return {"input_ids": ids, "labels": labels}


def load_and_cache_examples(args, evaluate=False):
    if args.local_rank not in [-1, 0]:
        dist.barrier()
    cached = os.path.join(args.data_dir, f"cached_{'dev' if evaluate else 'train'}_bow_{MAX_LEN}_sst")
    if os.path.exists(cached):
        print(f"Loading features from cached file {cached}", flush=True)
        features = torch.load(cached)
    else:
        print(f"Creating features from dataset file at {args.data_dir}", flush=True)
        features = convert_examples_to_features(read_examples(evaluate))
        if args.local_rank in [-1, 0]:
            torch.save(features, cached)
    if args.local_rank == 0:  # BUG
        dist.barrier()  # WAITS
    return TensorDataset(features["input_ids"], features["labels"])


class BagOfWords(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(len(VOCAB) + 1, 16, padding_idx=0)
        self.out = nn.Linear(16, 2)

    def forward(self, input_ids):
        return self.out(self.emb(input_ids))


def train(args, train_dataset, model):
    sampler = DistributedSampler(train_dataset, seed=0)
    loader = DataLoader(train_dataset, batch_size=args.train_batch_size, sampler=sampler)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    step = 0
    for input_ids, labels in loader:
        loss = nn.functional.cross_entropy(model(input_ids), labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        step += 1
        if step >= args.max_steps:
            break
    return step, loss.item()


def evaluate(args, model):
    eval_dataset = load_and_cache_examples(args, evaluate=True)  # WAITS
    loader = DataLoader(eval_dataset, batch_size=8)
    correct = 0
    with torch.no_grad():
        for input_ids, labels in loader:
            correct += (model(input_ids).argmax(-1) == labels).sum().item()
    return {"acc": correct / len(eval_dataset)}


def worker():
    args = Args()
    if args.local_rank == 0:
        shutil.rmtree(args.data_dir, ignore_errors=True)
        os.makedirs(args.data_dir)
    dist.barrier()
    torch.manual_seed(42)
    model = DDP(BagOfWords())
    if args.do_train:
        train_dataset = load_and_cache_examples(args, evaluate=False)
        global_step, tr_loss = train(args, train_dataset, model)
        print(f"[rank {args.local_rank}] global_step = {global_step}, loss = {tr_loss:.4f}", flush=True)
    if args.do_train and args.local_rank in [-1, 0]:
        torch.save(model.module.state_dict(), os.path.join(args.data_dir, "pytorch_model.bin"))
    if args.do_eval and args.local_rank in [-1, 0]:
        result = evaluate(args, model.module)  # WAITS
        print(f"eval results: {result}", flush=True)
        shutil.rmtree(args.data_dir, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
