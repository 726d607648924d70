"""compressed-tensors: under DDP, every rank rewrites the same disk-offloaded safetensors file, and a rank reads a file
that another rank has just truncated ("header too small").

Source: vllm-project/compressed-tensors PR #699, "[bugfix] Distributed Cache -- add barrier to update_offload to avoid
race conditions" (May 2026), resolving vllm-project/llm-compressor issue #2665 (an AWQ DDP run on a disk-offloaded
model failing with safetensors "header too small"). The PR: "`update_offload` calls on DistributedDisk/CPU/DeviceCache
were concluded without a `dist.barrier` ... This caused some ranks to continue to the next operation while the source
rank was still writing"; its fix gives `DistributedDiskCache` an `update_offload` in which only the source rank writes,
followed by a barrier, and its regression test has all ranks update and read back the same tensor. Modelled on
`src/compressed_tensors/offload/cache/disk.py` (`DiskCache.update_offload` -> `save_file`, `onload` -> `safe_open`),
`cache/dist_disk.py` (`DistributedDiskCache.offload`: source writes, `broadcast_object_list`, barrier) and
`offload/__init__.py` `update_offload_parameter`, whose docstring before the PR left it to the caller to ensure "that,
for any parameter/buffer, only one rank calls this function at a time"; the caller is an AWQ-style smoothing loop.

What it does: two ranks calibrate a two-layer model whose q/k/v weights are offloaded to disk (a folder made by rank 0,
path broadcast). For each layer they all-reduce activation statistics, compute the same smoothing scale, write the
smoothed weights back with `update_offload_parameter` and onload them for the next layer. Files use safetensors'
layout (8-byte header length, JSON header, data); the writer truncates the file when it opens it and writes after
staging the tensor (0.6 s per updated weight here); rank 0 reaches the update 1.5 s after rank 1 (it also writes the
scale report).

The bug: the smoothing loop calls `update_offload_parameter` on every rank, and `DistributedDiskCache` inherits the
single-process `update_offload`, so both ranks rewrite the same files. Rank 1, done with its three writes, onloads `q`
while rank 0 has just truncated it and is still staging: rank 1 raises `SafetensorError: Error while deserializing
header: HeaderTooSmall`; rank 0 finishes and waits in the next layer's all-reduce.
"""

import datetime
import json
import os
import shutil
import struct
import tempfile
import time

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15

STAGING_SECONDS = 0.6
REPORT_SECONDS = 1.5


class SafetensorError(Exception):
    pass


def save_file(tensors, path, staging=STAGING_SECONDS):
    with open(path, "wb") as f:  # truncates the file at once
        time.sleep(staging)  # staging the tensor bytes (device -> host, dtype cast)
        header, blobs, offset = {}, [], 0
        for name, t in tensors.items():
            raw = t.contiguous().view(torch.uint8).numpy().tobytes()
            header[name] = {"dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape),
                            "data_offsets": [offset, offset + len(raw)]}
            blobs.append(raw)
            offset += len(raw)
        encoded = json.dumps(header).encode()
        f.write(struct.pack("<Q", len(encoded)) + encoded + b"".join(blobs))


def load_tensor(path, name):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise SafetensorError("Error while deserializing header: HeaderTooSmall")  # WAITS
    (n,) = struct.unpack("<Q", data[:8])
    if len(data) < 8 + n:
        raise SafetensorError("Error while deserializing header: InvalidHeaderDeserialization")
    info = json.loads(data[8:8 + n])[name]
    start, end = info["data_offsets"]
    raw = bytearray(data[8 + n + start:8 + n + end])
    return torch.frombuffer(raw, dtype=getattr(torch, info["dtype"])).view(info["shape"]).clone()


class DiskCache:
    def __init__(self, offload_dir):
        self.offload_dir = offload_dir
        self.index = {}

    def offload(self, key, tensor):
        path = os.path.join(self.offload_dir, f"{key}.safetensors")
        save_file({"weight": tensor}, path, staging=0.0)
        self.index[key] = {"safetensors_file": path, "weight_name": "weight"}

    def onload(self, key):
        info = self.index[key]
        return load_tensor(info["safetensors_file"], info["weight_name"])  # WAITS

    def update_offload(self, key, data):
        info = self.index[key]
        save_file({info["weight_name"]: data}, info["safetensors_file"])


class DistributedDiskCache(DiskCache):
    def offload(self, key, tensor):
        if dist.get_rank() == 0:
            super().offload(key, tensor)
            meta = [self.index[key]]
        else:
            meta = [None]
        dist.broadcast_object_list(meta, src=0)
        self.index[key] = meta[0]
        dist.barrier()  # wait for the write to finish


def update_offload_parameter(cache, key, data):
    cache.update_offload(key, data)


def smooth_layer(cache, layer, x, rank):
    stats = x.abs().mean(0)
    dist.all_reduce(stats)  # WAITS
    stats /= dist.get_world_size()
    weights = {name: cache.onload(f"layers.{layer}.{name}") for name in ("q", "k", "v")}
    w_max = torch.stack([w.abs().amax(0) for w in weights.values()]).amax(0)
    scales = (stats.sqrt() / w_max.clamp(min=1e-5).sqrt()).clamp(min=1e-4)
    if rank == 0:
        time.sleep(REPORT_SECONDS)  # rank 0 writes the per-layer scale report
        print(f"layer {layer}: scales {[round(s, 3) for s in scales.tolist()]}", flush=True)
    for name, w in weights.items():
        update_offload_parameter(cache, f"layers.{layer}.{name}", w * scales)  # BUG
    smoothed = {name: cache.onload(f"layers.{layer}.{name}") for name in ("q", "k", "v")}  # WAITS
    return torch.tanh((x / scales) @ smoothed["q"].T + (x / scales) @ smoothed["v"].T)


def calibrate(cache, rank):
    x = torch.randn(16, 6, generator=torch.Generator().manual_seed(7 + rank))
    for layer in range(2):
        x = smooth_layer(cache, layer, x, rank)  # WAITS
    return x


def worker():
    rank = dist.get_rank()
    folder = [tempfile.mkdtemp(prefix="ct_offload_") if rank == 0 else None]
    dist.broadcast_object_list(folder, src=0)
    cache = DistributedDiskCache(folder[0])
    try:
        torch.manual_seed(0)
        for layer in range(2):
            for name in ("q", "k", "v"):
                cache.offload(f"layers.{layer}.{name}", torch.randn(6, 6))
        out = calibrate(cache, rank)  # WAITS
        dist.barrier()
        print(f"[rank {rank}] calibration done, output mean {out.mean().item():.4f}", flush=True)
    finally:
        open(os.path.join(folder[0], f".left{rank}"), "w").close()
        if all(os.path.exists(os.path.join(folder[0], f".left{r}")) for r in range(dist.get_world_size())):
            shutil.rmtree(folder[0], ignore_errors=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
