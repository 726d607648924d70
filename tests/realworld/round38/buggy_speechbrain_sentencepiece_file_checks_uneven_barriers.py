"""SpeechBrain `SentencePiece.__init__`: each rank checks on its own whether the text file exists and, if not, runs
`run_on_main(self._csv2text)` -- one more barrier than a rank that finds the file -- so the barriers pair up wrongly
and a non-main rank loads the tokenizer model before the main process has trained it (buggy).

Source: speechbrain/speechbrain PR #2633 ("Fix tokenizer with DDP"); `speechbrain/tokenizers/SentencePiece.py`
`SentencePiece.__init__` (`if not os.path.isfile(self.text_file): run_on_main(self._csv2text)`, then
`run_on_main(self._train_BPE)`, then `self.sp.load(...)` on every rank); `speechbrain/utils/distributed.py`
`run_on_main` (the function on the main process, then `ddp_barrier()` on every rank).
The PR: "Any call to torch.distributed.barrier will automatically let any other process having encountered
torch.distributed.barrier to continue, even if it's a different one ... The SentencePiece class uses run_on_main
yet the problem can happen." Here the main process writes the text file and waits in `_csv2text`'s barrier; rank 1
arrives later, finds the text file, skips that `run_on_main` and enters `_train_BPE`'s barrier, which releases both;
rank 1 then loads `100_unigram.model` while the main process is still training it and raises FileNotFoundError;
the main process, done training, waits in `_train_BPE`'s barrier.

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

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15


def if_main_process():
    return dist.get_rank() == 0


def ddp_barrier():
    dist.barrier()  # WAITS


def run_on_main(func):
    if if_main_process():
        func()
    ddp_barrier()  # WAITS


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
        if not os.path.isfile(self.prefix_model_file + ".model"):
            if not os.path.isfile(self.text_file):  # BUG
                run_on_main(self._csv2text)
            run_on_main(self._train_BPE)  # WAITS
        self.sp = SentencePieceProcessor()
        self.sp.load(self.prefix_model_file + ".model")

    def _csv2text(self):
        with open(self.annotation_train) as f, open(self.text_file, "w") as out:
            for row in csv.DictReader(f):
                out.write(row[self.annotation_read] + "\n")

    def _train_BPE(self):
        SentencePieceTrainer.train(self.text_file, self.prefix_model_file + ".model", self.vocab_size)


def worker():
    rank = dist.get_rank()
    root = os.path.join(tempfile.gettempdir(), f"r38_sb_bug_{os.environ.get('MASTER_PORT', '0')}_{os.getppid()}")
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
    tokenizer = SentencePiece(os.path.join(root, "tokenizer"), 100, annotation, "wrd")  # WAITS
    ids = tokenizer.sp.encode_as_ids("the cat ran")
    print(f"[rank {rank}] tokenizer ready, 'the cat ran' -> {ids}")
    dist.barrier()
    if rank == 0:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
