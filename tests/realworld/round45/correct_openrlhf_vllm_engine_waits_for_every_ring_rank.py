"""OpenRLHF (fixed): the vLLM engine waits for one request batch per ring-attention group, the ranks that send.

Source: OpenRLHF/OpenRLHF PR #809 ("fix ring attn in create_vllm_engines"), `openrlhf/trainer/ray/vllm_engine.py`
(`LLMRayActor.add_requests`: generation starts when `self.actor_counter == self.num_actors`) and
`create_vllm_engines(num_actors=...)`, and the experience maker's `generate_samples`. "When ring_attn is enable, only
`actor_num_nodes * actor_num_gpus_per_node // ring_attn_size` actor will call `generate_samples`", but the engine was
created with the full actor count, so it "can not get into `if self.actor_counter == self.num_actors:`" and the
rollout never starts.

Here (gloo, CPU, 3 ranks) rank 0 plays the vLLM engine and ranks 1-2 are the actor ranks of one ring-attention group
of size 2. The ring's rank 0 (global rank 1) adds its prompts through the store (a key per request batch, the
engine's counter); the engine waits until `num_actors` batches are in, generates, and posts the responses; ring rank
0 waits for its responses (`get_responses`) and broadcasts them to its ring peer. This is the fix the PR gives: the
engine is created with `num_actors` = actor ranks // `ring_attn_size`.
"""

import datetime
import pickle

import torch
import torch.distributed as dist
from torch.distributed.distributed_c10d import _get_default_store

KIND = "correct"
WORLD_SIZE = 3
TIMEOUT = 15

ACTOR_RANKS = [1, 2]
RING_ATTN_SIZE = 2
WAIT = datetime.timedelta(seconds=TIMEOUT)


class VLLMEngine:
    def __init__(self, store, num_actors: int):
        self.store = store
        self.num_actors = num_actors

    def serve_one_rollout(self) -> None:
        keys = [f"requests/{i}" for i in range(self.num_actors)]
        self.store.wait(keys, WAIT)
        for key in keys:
            actor, prompts = pickle.loads(self.store.get(key))
            completions = [p + " -> " + p[::-1] for p in prompts]
            self.store.set(f"responses/{actor}", pickle.dumps(completions))


def create_vllm_engine(store) -> VLLMEngine:
    num_actors = len(ACTOR_RANKS) // RING_ATTN_SIZE
    return VLLMEngine(store, num_actors)


def generate_samples(store, rank: int, ring_group) -> list[str]:
    ring_rank = dist.get_rank(ring_group)
    payload = [None]
    if ring_rank == 0:
        actor = ACTOR_RANKS.index(rank) // RING_ATTN_SIZE
        prompts = ["2+2", "3*3"]
        store.set(f"requests/{actor}", pickle.dumps((actor, prompts)))
        store.wait([f"responses/{actor}"], WAIT)
        payload = [pickle.loads(store.get(f"responses/{actor}"))]
    dist.broadcast_object_list(payload, src=ACTOR_RANKS[0], group=ring_group)
    return payload[0]


def worker():
    rank = dist.get_rank()
    store = _get_default_store()
    ring_group = dist.new_group(ACTOR_RANKS)
    if rank == 0:
        engine = create_vllm_engine(store)
        engine.serve_one_rollout()
        print(f"[rank {rank}] engine served the rollout")
    else:
        samples = generate_samples(store, rank, ring_group)
        print(f"[rank {rank}] samples {samples}")
    done = torch.ones(1)
    dist.all_reduce(done)
    print(f"[rank {rank}] rollout done on {int(done.item())} ranks")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
