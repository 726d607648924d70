# Metadata exchanged through the c10d store, one key per rank (the way vLLM's StatelessProcessGroup in
# vllm/distributed/utils.py sends small objects over a TCPStore instead of a collective): every rank publishes
# how many cache blocks it can hold, and rank 0 reads every rank's key to size the cache. A rank with no free
# memory returns before publishing ("nothing to offer"), so rank 0's `store.get` of that rank's key blocks until
# the store's timeout, and the others wait for rank 0 in the barrier. Written here.
# expect: 26 store-key store.get
import torch.distributed as dist

PREFIX = "cache/blocks"


def publish_blocks(store, free_blocks):
    rank = dist.get_rank()
    blocks = free_blocks[rank]
    if blocks == 0:
        return
    store.set(f"{PREFIX}/{rank}", str(blocks))


def plan_cache(store, free_blocks):
    publish_blocks(store, free_blocks)
    world_size = dist.get_world_size()
    if dist.get_rank() == 0:
        counts = []
        for r in range(world_size):
            counts.append(int(store.get(f"{PREFIX}/{r}")))
        print("smallest cache:", min(counts))
    dist.barrier()
