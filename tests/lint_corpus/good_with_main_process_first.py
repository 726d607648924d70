# barrierlab.main_process_first(): rank 0 builds the cache first, the others
# wait inside the context manager and then read it.
# expect: none
import barrierlab
import torch.distributed as dist
from barrierlab import main_process_first
from datasets import load_dataset


def build_datasets(tokenizer):
    with main_process_first():
        raw = load_dataset("imdb")
        tokenized = raw.map(lambda b: tokenizer(b["text"]), batched=True)
    with barrierlab.main_process_first(local=True):
        extra = load_dataset("ag_news")
    if dist.get_rank() == 0:
        print(len(tokenized["train"]), len(extra["train"]))
    return tokenized, extra
