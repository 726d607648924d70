# Reduced from microsoft/DeepSpeedExamples applications/DeepSpeed-Chat/dschat/utils/data/data_utils.py
# create_prompt_dataset: local rank 0 builds and torch.saves the dataset cache when it is missing, every rank waits
# at one barrier, then every rank torch.loads it. Kept: the cache test, the build/save on local rank 0, the barrier,
# the load; dropped: the tokenisation and the dataset blending.
import hashlib
import os
import torch


def create_dataset(local_rank, data_path, output_path, seed):
    return [("prompt", "answer")] * 8


def create_prompt_dataset(local_rank, data_path, output_path, seed, reload=False):
    os.makedirs(output_path, exist_ok=True)
    fname = hashlib.sha256("_".join(data_path).encode()).hexdigest()
    train_fname = f"{output_path}/traindata_{fname}.pt"
    eval_fname = f"{output_path}/evaldata_{fname}.pt"
    cache_found = os.path.isfile(train_fname) and os.path.isfile(eval_fname)
    buf_create_cache = torch.ByteTensor([not cache_found])
    torch.distributed.all_reduce(buf_create_cache)
    if local_rank <= 0 and (buf_create_cache.item() != 0 or reload):
        train_dataset = create_dataset(local_rank, data_path, output_path, seed)
        eval_dataset = create_dataset(local_rank, data_path, output_path, seed)
        torch.save(train_dataset, train_fname)
        torch.save(eval_dataset, eval_fname)
    torch.distributed.barrier()
    return torch.load(train_fname), torch.load(eval_fname)
