"""TorchRec: a test helper passes ``sharding_strategy=None`` into ``DMPCollection``, whose rank-0-only log line fails.

Source: meta-pytorch/torchrec PR #4287 (2026, "Fix DMPCollection 2D-sharding test hang from sharding_strategy=None
default"). The 2D embedding-collection tests timed out every time. The test helpers ``sharding_single_rank_test``
declared ``sharding_strategy: Optional[ShardingStrategy] = None`` and forwarded the ``None`` into
``DMPCollection(...)``, whose constructor reads ``sharding_strategy.name`` inside a block that logs on rank 0 only.
Rank 0 raised ``AttributeError`` and left; every other rank went on into the WORLD broadcast of the
collective validation and waited for rank 0 for ever. The fix gives the helpers the constructor's own default,
``ShardingStrategy.DEFAULT``.

What this item does: two ranks build a small column-wise sharded embedding collection (each rank holds half of the
columns of two tables), validate the sharding plan with a broadcast from rank 0, look up a batch of ids through an
all-gather of the column shards and compare the result with the unsharded tables.

The bug: the helper's ``None`` default reaches ``DMPCollection.__init__``; rank 0 raises on the log line, rank 1
waits in the plan-validation ``broadcast`` that rank 0 never joins.
"""

import enum
import logging
import zlib
from datetime import timedelta
from typing import Optional

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15

logger = logging.getLogger("r51.dmp_collection")

# name -> (rows, embedding dim)
TABLES = {"user_id": (40, 8), "item_id": (60, 8)}


class ShardingStrategy(enum.Enum):
    DEFAULT = 0
    PER_MODULE = 1


class ColumnWiseShard:
    """One rank's columns of a table; a lookup all-gathers the other ranks' columns."""

    def __init__(self, weight: torch.Tensor, rank: int, world_size: int) -> None:
        cols = weight.shape[1] // world_size
        self.local = weight[:, rank * cols : (rank + 1) * cols].clone()
        self.world_size = world_size

    def lookup(self, ids: torch.Tensor) -> torch.Tensor:
        local = self.local[ids]
        parts = [torch.empty_like(local) for _ in range(self.world_size)]
        dist.all_gather(parts, local)
        return torch.cat(parts, dim=1)


class DMPCollection:
    """A much reduced distributed model-parallel wrapper: plan, log, validate the plan, shard."""

    def __init__(
        self,
        weights: dict,
        world_size: int,
        sharding_strategy: ShardingStrategy = ShardingStrategy.DEFAULT,
    ) -> None:
        self.rank = dist.get_rank()
        self.plan = {name: ("column_wise", tuple(range(world_size))) for name in sorted(weights)}
        if self.rank == 0:
            logger.info(
                "DMPCollection: %d tables, plan %s, strategy %s",
                len(self.plan),
                self.plan,
                sharding_strategy.name,
            )
        self._init_collective_validation()  # WAITS
        self.shards = {name: ColumnWiseShard(w, self.rank, world_size) for name, w in weights.items()}

    def _init_collective_validation(self) -> None:
        mine = torch.tensor([zlib.crc32(repr(self.plan).encode())], dtype=torch.int64)
        ref = mine.clone()
        dist.broadcast(ref, src=0)  # WAITS
        if not torch.equal(ref, mine):
            raise RuntimeError(f"rank {self.rank}: sharding plan differs from rank 0's")

    def lookup(self, name: str, ids: torch.Tensor) -> torch.Tensor:
        return self.shards[name].lookup(ids)


def sharding_single_rank_test(
    world_size: int,
    sharding_strategy: Optional[ShardingStrategy] = None,  # BUG
) -> None:
    gen = torch.Generator().manual_seed(51)
    weights = {name: torch.randn(rows, dim, generator=gen) for name, (rows, dim) in TABLES.items()}
    dmp = DMPCollection(weights, world_size, sharding_strategy=sharding_strategy)  # WAITS
    for name, (rows, _) in TABLES.items():
        ids = torch.arange(0, rows, 7)  # the same global batch of ids on every rank
        got = dmp.lookup(name, ids)
        if not torch.allclose(got, weights[name][ids]):
            raise AssertionError(f"{name}: sharded lookup differs from the table")
    print(f"rank {dist.get_rank()}: column-wise lookups match for {sorted(TABLES)}", flush=True)


def worker() -> None:
    # the 2D column-wise test calls the helper without a strategy
    sharding_single_rank_test(dist.get_world_size())  # WAITS


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
