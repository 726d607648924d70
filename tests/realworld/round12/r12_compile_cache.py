"""Helper module of the compile-cache pair (not an item): a compiled-source cache shared by the ranks of one job.

Source: modelled on unslothai/unsloth-zoo ``unsloth_zoo/utils.py`` (``is_main_process``, ``distributed_function``:
the main process runs the function, the others pass ``None``, ``torch.distributed.broadcast_object_list(object_list,
src=0)`` hands the result to everyone - "broadcast_object_list auto blocks so no need for barrier") and
``unsloth_zoo/compiler.py`` (``write_file``, the generated source imported back from the cache directory). The cache
directory is a fresh directory under the temp dir made by rank 0 and broadcast to the others (PR #967 also
broadcasts rank 0's temp paths), so that no earlier job's files are found; rank 0 removes it at the end of the job.
"""

import importlib.util
import os
import shutil
import tempfile

import torch.distributed as dist


_CACHE_DIR = None


def set_up_cache_dir():
    """Every rank calls this once at the start of the job: rank 0 makes the directory, the others learn its path."""
    global _CACHE_DIR
    path = [tempfile.mkdtemp(prefix="r12_compiled_cache_") if is_main_process() else None]
    dist.broadcast_object_list(path, src=0)
    _CACHE_DIR = path[0]


def cache_dir():
    return _CACHE_DIR


def remove_cache_dir():
    if is_main_process() and _CACHE_DIR is not None:
        shutil.rmtree(_CACHE_DIR, ignore_errors=True)


def is_main_process():
    return not dist.is_initialized() or dist.get_rank() == 0


def distributed_function(n=1, function=None, *args, **kwargs):
    if not dist.is_initialized():
        return function(*args, **kwargs)
    if is_main_process():
        object_list = function(*args, **kwargs)
        if n == 1:
            object_list = [object_list]
    else:
        object_list = [None for _ in range(n)]
    dist.broadcast_object_list(object_list, src=0)  # blocks every rank until rank 0 has run the function
    return object_list[0] if n == 1 else object_list


def write_file(location, source):
    temporary = f"{location}.{os.getpid()}.tmp"
    with open(temporary, "w") as file:
        file.write(source)
    os.replace(temporary, location)  # atomic: readers see the old state or the whole file
    return True


def load_module(name, location):
    spec = importlib.util.spec_from_file_location(name, location)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
