"""Real accelerate: ``with accelerator.main_process_first():`` around building a cached data file.

Source: huggingface/accelerate pull request #98 ("Add context manager to allow main process first"), whose
example is exactly this cache pattern, and src/accelerate/test_utils/scripts/test_script.py (the check that
the main process really goes first, fixed in pull request #1304 for issue #1303). The main process builds the
cache inside the block; the others enter it only after the main process leaves, and find the file. The
context manager is a ``wait_for_everyone()`` before the block on the other processes and after it on the main
process: each process calls it once.
"""

import os

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 5
REQUIRES = ("accelerate",)


def worker():
    from accelerate import Accelerator

    import r4_common

    accelerator = Accelerator(cpu=True)
    cache = os.path.join(r4_common.shared_dir("acc_main_first"), "features.pt")
    with accelerator.main_process_first():
        if os.path.exists(cache):
            features = torch.load(cache)
        else:
            assert accelerator.is_main_process, "a non-main process entered before the cache existed"
            features = r4_common.toy_dataset(32).tensors[0] * 2.0  # the "time consuming operation"
            torch.save(features, cache)
    checksum = accelerator.gather(features.sum().reshape(1))
    assert torch.allclose(checksum, checksum[0].expand_as(checksum))
    accelerator.wait_for_everyone()
    return float(checksum[0])


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
