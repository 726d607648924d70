"""SpeechBrain `SentencePiece.__init__`: the checks for an existing model and text file, the text extraction and the
training all run on the main process inside one `run_on_main`, so every rank passes the same single barrier before
it loads the trained model (correct).

Source: speechbrain/speechbrain PR #2633 ("Fix tokenizer with DDP"); `speechbrain/tokenizers/SentencePiece.py`
`SentencePiece.__init__`; `speechbrain/utils/distributed.py` `run_on_main`.
The PR's point: "if we have a torch.distributed.barrier in a if statement that is only encountered by the main
process, it can just lift the barrier of the other process" -- barriers pair by count, not by place. Here no rank
decides on its own how many barriers it makes: the file checks move into the function `run_on_main` runs on the
main process, every rank makes exactly one barrier, and the model exists when any rank loads it.

Stand-ins: `SentencePieceTrainer.train` counts the words and writes a JSON vocabulary after 1.0 s (training time);
`SentencePieceProcessor.load` reads it; rank 1's own data preparation takes 0.5 s before it builds the tokenizer.
The transcripts are a small CSV written in code (by the main process, before the run's first barrier).
"""

import csv
import json
import os
import shutil
import tempfile
import time
from collections import Counter
from datetime import timedelta

import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15


def if_main_process():
    return dist.get_rank() == 0


def ddp_barrier():
    dist.barrier()


def run_on_main(func):
    if if_main_process():
        func()
    ddp_barrier()


class SentencePieceTrainer:
    @staticmethod
    def train(text_file, model_file, vocab_size):
        time.sleep(1.0)  # stand-in: SentencePiece training
        with open(text_file) as f:
            counts = Counter(word for line in f for word in line.split())
        vocab = ["<unk>"] + [w for w, _ in counts.most_common(vocab_size - 1)]
        with open(model_file, "w") as f:
            json.dump(vocab, f)


class SentencePieceProcessor:
    def load(self, model_file):
        with open(model_file) as f:
            self.vocab = {w: i for i, w in enumerate(json.load(f))}

    def encode_as_ids(self, sentence):
        return [self.vocab.get(w, 0) for w in sentence.split()]


class SentencePiece:
    def __init__(self, model_dir, vocab_size, annotation_train, annotation_read, model_type="unigram"):
        os.makedirs(model_dir, exist_ok=True)
        self.annotation_train = annotation_train
        self.annotation_read = annotation_read
        self.text_file = os.path.join(model_dir, "train.txt")
        self.prefix_model_file = os.path.join(model_dir, f"{vocab_size}_{model_type}")
        self.vocab_size = vocab_size
        run_on_main(self._prepare_and_train)
        self.sp = SentencePieceProcessor()
        self.sp.load(self.prefix_model_file + ".model")

    def _prepare_and_train(self):
        if not os.path.isfile(self.prefix_model_file + ".model"):
            if not os.path.isfile(self.text_file):
                self._csv2text()
            self._train_BPE()

    def _csv2text(self):
        with open(self.annotation_train) as f, open(self.text_file, "w") as out:
            for row in csv.DictReader(f):
                out.write(row[self.annotation_read] + "\n")

    def _train_BPE(self):
        SentencePieceTrainer.train(self.text_file, self.prefix_model_file + ".model", self.vocab_size)


def worker():
    rank = dist.get_rank()
    root = os.path.join(tempfile.gettempdir(), f"r38_sb_ok_{os.environ.get('MASTER_PORT', '0')}_{os.getppid()}")
    annotation = os.path.join(root, "train.csv")
    if rank == 0:
        os.makedirs(root, exist_ok=True)
        with open(annotation, "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["ID", "wrd"])
            for i, text in enumerate(["the cat sat", "the dog ran", "a cat ran far", "the bird sat still"]):
                writer.writerow([f"utt{i}", text])
    dist.barrier()  # the data preparation is done
    if rank == 1:
        time.sleep(0.5)  # stand-in: rank 1's own data preparation
    tokenizer = SentencePiece(os.path.join(root, "tokenizer"), 100, annotation, "wrd")
    ids = tokenizer.sp.encode_as_ids("the cat ran")
    print(f"[rank {rank}] tokenizer ready, 'the cat ran' -> {ids}")
    dist.barrier()
    if rank == 0:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
