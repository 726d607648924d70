"""An RLHF weight sync from ZeRO-3-style sharded trainer ranks to a rollout engine over a model-update group that
holds trainer rank 0 and the engine only; trainer rank 0 skips the weights the engine does not load -- a list
only the update group's members receive -- before the trainer group's gather of the parameter.

Models: OpenRLHF ``openrlhf/trainer/ray/ppo_actor.py`` ``_broadcast_to_vllm`` (for each parameter: rank 0 tells
the vLLM engines ``update_weight(name, dtype, shape)``; every trainer rank enters
``deepspeed.zero.GatheredParameters([param], enabled=zero_stage == 3)``; ``if torch.distributed.get_rank() == 0:
torch.distributed.broadcast(param.data, 0, group=self._model_update_group)``; the ``_model_update_group`` made of
DeepSpeed rank 0 and the engines' ranks); vLLM / verl engines that load a tied ``lm_head`` from the embedding and
report the weight names they take; the ``new_group`` docs (a group's collectives involve its members only).

What it does: 3 ranks. Ranks 0 and 1 are the trainer: every parameter of a tiny LM (``embed``, ``proj``,
``lm_head``) is split in two, each trainer rank holds one half and takes an SGD step on it. Rank 2 is the rollout
engine. Groups: trainer ``[0, 1]`` and model-update ``[0, 2]``, made by every rank. The sync: the engine
broadcasts the names it loads (``embed``, ``proj``; it ties ``lm_head`` to ``embed``) on the update group; for
each parameter the trainer ranks all-gather the halves on the trainer group and rank 0 broadcasts the full tensor
to the engine. Then every rank meets in a world barrier and the engine generates one token.

The bug: ``if manifest is not None and name not in manifest: continue`` comes before the gather. Only rank 0 --
a member of the update group -- has the manifest; it skips ``lm_head``'s gather, rank 1 (``manifest`` is ``None``)
does not. Rank 1 waits in the ``lm_head`` all-gather on the trainer group, ranks 0 and 2 in the world barrier.
"""

from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 3
TIMEOUT = 20

TRAINER_RANKS = [0, 1]
UPDATE_RANKS = [0, 2]  # trainer rank 0 + the rollout engine
SHAPES = {"embed": (8, 4), "proj": (4, 4), "lm_head": (8, 4)}


class ShardedTrainer:
    def __init__(self, rank, trainer_group, update_group):
        self.rank, self.trainer_group, self.update_group = rank, trainer_group, update_group
        g = torch.Generator().manual_seed(0)
        full = {name: torch.randn(shape, generator=g) for name, shape in SHAPES.items()}
        self.shards = {name: t.chunk(2)[rank].clone() for name, t in full.items()}

    def step(self):
        for name, shard in self.shards.items():
            shard.sub_(0.01 * shard.sign())

    def _gather_full(self, shard):
        parts = [torch.empty_like(shard) for _ in TRAINER_RANKS]
        dist.all_gather(parts, shard, group=self.trainer_group)  # WAITS
        return torch.cat(parts)

    def _engine_manifest(self):
        if self.rank not in UPDATE_RANKS:
            return None  # not a member of the update group: the engine's list is not sent here
        box = [None]
        dist.broadcast_object_list(box, src=2, group=self.update_group)
        return box[0]

    def broadcast_to_engine(self):
        manifest = self._engine_manifest()
        for name, shard in self.shards.items():
            if manifest is not None and name not in manifest:
                continue  # BUG
            full = self._gather_full(shard)  # WAITS
            if self.rank == 0:
                dist.broadcast(full, src=0, group=self.update_group)


class RolloutEngine:
    def __init__(self, update_group):
        self.update_group = update_group
        self.weights = {}

    def load_weights(self):
        manifest = ["embed", "proj"]  # lm_head is tied to embed
        dist.broadcast_object_list([manifest], src=2, group=self.update_group)
        for name in manifest:
            t = torch.empty(SHAPES[name])
            dist.broadcast(t, src=0, group=self.update_group)
            self.weights[name] = t
        self.weights["lm_head"] = self.weights["embed"]

    def generate(self, token):
        h = self.weights["embed"][token] @ self.weights["proj"]
        return int((self.weights["lm_head"] @ h).argmax())


def worker():
    rank = dist.get_rank()
    trainer_group = dist.new_group(TRAINER_RANKS, timeout=timedelta(seconds=TIMEOUT))
    update_group = dist.new_group(UPDATE_RANKS, timeout=timedelta(seconds=TIMEOUT))
    if rank in TRAINER_RANKS:
        trainer = ShardedTrainer(rank, trainer_group, update_group)
        trainer.step()
        trainer.broadcast_to_engine()  # WAITS
    else:
        engine = RolloutEngine(update_group)
        engine.load_weights()
    dist.barrier()  # WAITS
    if rank == 2:
        print(f"engine: next token after 3 is {engine.generate(3)}", flush=True)


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
