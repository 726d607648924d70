# The same exchange with a key from every rank whatever its data: a rank with no free memory publishes 0, so
# rank 0's reads of every rank's key all return, and a rank-0-only read of the store makes no collective call.
# Modelled on vLLM's StatelessProcessGroup (vllm/distributed/utils.py: one store key per sender, read by the
# receivers) and torch/distributed/elastic/utils/store.py (`synchronize`: every rank sets its key), written here.
# expect: none
import torch.distributed as dist

PREFIX = "cache/blocks"


def publish_blocks(store, free_blocks):
    rank = dist.get_rank()
    blocks = free_blocks[rank]
    if blocks == 0:
        print(f"rank {rank}: no free blocks, publishing 0")
    store.set(f"{PREFIX}/{rank}", str(blocks))


def plan_cache(store, free_blocks):
    publish_blocks(store, free_blocks)
    world_size = dist.get_world_size()
    if dist.get_rank() == 0:
        keys = [f"{PREFIX}/{r}" for r in range(world_size)]
        store.wait(keys)
        print("smallest cache:", min(int(store.get(k)) for k in keys))
    dist.barrier()
