"""Helper module of the compile-cache pair (not an item): a compiled-source cache shared by the ranks of one job.

Modelled on unslothai/unsloth-zoo ``unsloth_zoo/utils.py`` (``is_main_process``, ``distributed_function``: the main
process runs the function, the others pass ``None``, ``torch.distributed.broadcast_object_list(object_list,
src=0)`` hands the result to everyone - "broadcast_object_list auto blocks so no need for barrier") and
``unsloth_zoo/compiler.py`` (``write_file``, the generated source imported back from the cache directory). The
cache directory is under the temp dir, named after ``MASTER_PORT``: one directory per job, shared by its ranks.
"""

import importlib.util
import os
import shutil
import tempfile

import torch.distributed as dist


def cache_dir():
    path = os.path.join(tempfile.gettempdir(), f"r12_compiled_cache_{os.environ.get('MASTER_PORT', '0')}")
    os.makedirs(path, exist_ok=True)
    return path


def remove_cache_dir():
    shutil.rmtree(cache_dir(), ignore_errors=True)


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
