"""lighteval under accelerate data parallelism: the main process alone writes the sample cache, then a barrier.

Models: huggingface/lighteval issue #1102 and PR #1271 ("Fix sample-cache corruption under accelerate
data-parallel": "`SampleCache.get_cache_path` is not rank-aware, so every rank's `@cached` wrapper calls
`cache_samples` and writes the same parquet file concurrently. The interleaved writes corrupt the file, and the
subsequent `get_samples_from_cache` / `load_dataset` call then fails to load it"). Code modelled (written here, not
copied): ``src/lighteval/utils/cache_management.py`` (``SampleCache.get_cache_path`` -- one file per model hash
and task --, ``cache_samples``, ``get_samples_from_cache``, the ``cached`` decorator that runs the model on a cache
miss, writes the results and returns them as read back from the cache), the transformers backend's
``greedy_until`` (each process generates for its shard of the documents, then ``pad_and_gather`` -- by the time the
results reach the wrapper they are gathered, the same on every rank), the pipeline's loop over tasks.

The fix modelled is PR #1271's: in the ``cached`` wrapper only the main process writes the cache, and every process
then calls ``accelerator.wait_for_everyone()`` before reading it, so no process reads a file that is being written
(the results are already gathered, so the main process holds them all). 2 ranks, two tasks, a stand-in parquet
writer (row groups 0.15 s apart, then the footer) and reader (the footer's magic bytes checked as pyarrow does);
the main process spends 1.5 s on its own sample table first, ``load_dataset`` takes 1.0 s to start (timing
stand-ins); rank 1 waits in the barrier while rank 0 writes, both read the complete file and score both tasks.
"""

import datetime
import hashlib
import json
import os
import shutil
import struct
import tempfile
import time

import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 20

TASKS = {"gsm8k_lite": 12, "arc_lite": 10}
ROW_GROUP = 2
ROW_GROUP_WRITE_SECONDS = 0.15
MAIN_SAMPLE_TABLE_SECONDS = 1.5
LOAD_DATASET_START_SECONDS = 1.0
MAGIC = b"PAR1"


class ArrowInvalid(ValueError):
    pass


def cache_root():
    tag = os.environ.get("MASTER_PORT") or str(os.getppid())
    return os.path.join(tempfile.gettempdir(), f"r32_lighteval_cache_{tag}")


def write_parquet(path, rows):
    with open(path, "wb") as f:
        f.write(MAGIC)
        offsets = []
        for start in range(0, len(rows), ROW_GROUP):
            offsets.append(f.tell())
            f.write(json.dumps(rows[start : start + ROW_GROUP]).encode() + b"\n")
            f.flush()
            time.sleep(ROW_GROUP_WRITE_SECONDS)
        footer = json.dumps({"num_rows": len(rows), "row_groups": offsets}).encode()
        f.write(footer + struct.pack("<I", len(footer)) + MAGIC)


def read_parquet(path):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 12 or data[-4:] != MAGIC:
        raise ArrowInvalid("Parquet magic bytes not found in footer. Either the file is corrupted or this is not "
                           f"a parquet file. ({path}, {len(data)} bytes)")
    (footer_len,) = struct.unpack("<I", data[-8:-4])
    footer = json.loads(data[-8 - footer_len : -8])
    rows = []
    for offset in footer["row_groups"]:
        rows.extend(json.loads(data[offset : data.index(b"\n", offset)]))
    return rows


class Accelerator:
    def __init__(self):
        self.process_index = dist.get_rank()
        self.num_processes = dist.get_world_size()
        self.is_main_process = self.process_index == 0

    def wait_for_everyone(self):
        dist.barrier()


class SampleCache:
    def __init__(self, model_name):
        self.model_hash = hashlib.sha256(model_name.encode()).hexdigest()[:12]
        self.cache_dir = os.path.join(cache_root(), self.model_hash)

    def get_cache_path(self, task_name):
        return os.path.join(self.cache_dir, f"{task_name}.parquet")

    def cache_samples(self, task_name, responses):
        os.makedirs(self.cache_dir, exist_ok=True)
        write_parquet(self.get_cache_path(task_name), responses)

    def get_samples_from_cache(self, task_name):
        time.sleep(LOAD_DATASET_START_SECONDS)
        return read_parquet(self.get_cache_path(task_name))


def cached(fn):
    def wrapper(self, task_name, docs):
        cache = self.cache
        if os.path.isfile(cache.get_cache_path(task_name)):
            return cache.get_samples_from_cache(task_name)
        responses = fn(self, task_name, docs)
        if self.accelerator.is_main_process:
            time.sleep(MAIN_SAMPLE_TABLE_SECONDS)
            print(f"[rank 0] {task_name}: first sample -> {responses[0]['text']!r}", flush=True)
        if self.accelerator.is_main_process:
            cache.cache_samples(task_name, responses)
        self.accelerator.wait_for_everyone()
        return cache.get_samples_from_cache(task_name)

    return wrapper


class TransformersModel:
    def __init__(self, accelerator):
        self.accelerator = accelerator
        self.cache = SampleCache("toy-llm-125m")

    def pad_and_gather(self, local):
        gathered = [None] * self.accelerator.num_processes
        dist.all_gather_object(gathered, local)
        return sorted((r for part in gathered for r in part), key=lambda r: r["doc_id"])

    @cached
    def greedy_until(self, task_name, docs):
        rank, world = self.accelerator.process_index, self.accelerator.num_processes
        local = []
        for doc_id, doc in docs[rank::world]:
            answer = sum(ord(c) for c in doc) % 97
            local.append({"doc_id": doc_id, "text": f"The answer is {answer}."})
        return self.pad_and_gather(local)


def run_pipeline(model):
    scores = {}
    for task_name, n_docs in TASKS.items():
        docs = [(i, f"{task_name} question {i}: what is {i} + {2 * i}?") for i in range(n_docs)]
        responses = model.greedy_until(task_name, docs)
        correct = sum(1 for r in responses if int(r["text"].split()[-1].rstrip(".")) % 2 == 0)
        scores[task_name] = correct / len(responses)
        print(f"[rank {model.accelerator.process_index}] {task_name}: {len(responses)} samples, "
              f"score {scores[task_name]:.3f}", flush=True)
    return scores


def worker():
    accelerator = Accelerator()
    if accelerator.is_main_process:
        shutil.rmtree(cache_root(), ignore_errors=True)
    accelerator.wait_for_everyone()
    scores = run_pipeline(TransformersModel(accelerator))
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        print(f"[rank 0] results: {scores}", flush=True)
        shutil.rmtree(cache_root(), ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
