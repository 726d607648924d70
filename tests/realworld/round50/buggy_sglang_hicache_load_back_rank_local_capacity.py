"""Modelled on sgl-project/sglang PR #33442 ("[HiCache] Decide load-back from a group-agreed capacity snapshot";
``python/sglang/srt/mem_cache/unified_radix_cache.py`` ``UnifiedRadixCache.load_back``, the scheduler's prefix
match feeding ``req.prefix_indices`` / ``extend_lens``, and the per-layer tensor-parallel ``all_reduce``).

What the code does: two tensor-parallel ranks each run a replica of the scheduler and its radix cache over their
own device KV pool, and a two-layer row-parallel model whose layers all-reduce their partial outputs over the TP
group. A decode request holds two pages (locked in the radix tree); the previous request has just finished and its
three pages go back to the pool through an asynchronous free that completes when the rank's own stream reaches it.
The next request's 32-token prefix was evicted to host memory earlier; the scheduler matches it and calls
``load_back``, which asks the device pool how much room it has, evicts unlocked device leaves if it is short, and
loads the prefix back only if it fits -- otherwise the prefix is treated as uncached and recomputed. What was loaded
back becomes the request's prefix; the prefill then runs the remaining (extend) tokens through the model.

The bug (the PR): ``load_back`` decides from rank-local pool state (``full_available_size()`` and what a local
``evict()`` freed), and that state drifts between TP ranks under load -- here rank 1's asynchronous free is one
scheduler tick behind rank 0's (the PR's coredumps found TP1 the short rank in 9 of 9 cases). Rank 0 has room and
loads the prefix back (8 extend tokens); rank 1 does not (40 extend tokens). "A rank that decides differently from
its peers enters the per-layer TP all_reduce with a differently-sized tensor": the ranks' first layer all-reduces
(8, 8) and (40, 8) tensors, which hangs on NCCL and makes gloo abort. The fix (the PR): decide from a group-agreed
capacity snapshot -- the available size all-reduced with MIN over the TP group, before and after eviction -- so
every rank loads back the same prefix.
"""

import datetime

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 15

PAGE = 4
POOL_PAGES = 12
HIDDEN = 8
VOCAB = 32
# ticks until this rank's stream reaches the previous request's free event (rank-local device progress)
STREAM_LAG = (0, 1)


class DevicePool:
    def __init__(self, num_pages, lag):
        self.free_pages = list(range(num_pages))
        self.in_flight = []  # [pages, ticks until the free event completes]
        self.lag = lag

    def alloc(self, num_tokens):
        n = -(-num_tokens // PAGE)
        if n > len(self.free_pages):
            return None
        pages, self.free_pages = self.free_pages[:n], self.free_pages[n:]
        return pages

    def release_async(self, pages):
        self.in_flight.append([pages, self.lag])

    def tick(self):
        for event in self.in_flight:
            event[1] -= 1
        self.free_pages += [p for pages, left in self.in_flight if left < 0 for p in pages]
        self.in_flight = [e for e in self.in_flight if e[1] >= 0]

    def full_available_size(self):
        return len(self.free_pages) * PAGE


class Node:
    def __init__(self, tokens, device_pages=None, lock_ref=0):
        self.tokens = tokens
        self.device_pages = device_pages
        self.lock_ref = lock_ref


class UnifiedRadixCache:
    def __init__(self, pool):
        self.pool = pool
        self.device_leaves = []
        self.host_nodes = {}

    def evict(self, num_tokens):
        freed = 0
        for node in list(self.device_leaves):
            if freed >= num_tokens:
                break
            if node.lock_ref == 0:
                self.pool.free_pages += node.device_pages
                freed += len(node.device_pages) * PAGE
                self.device_leaves.remove(node)
                node.device_pages = None
        return freed

    def load_back(self, node):
        needed = len(node.tokens)
        available = self.pool.full_available_size()  # BUG
        if available < needed:
            self.evict(needed - available)
            available = self.pool.full_available_size()
        if available < needed:
            return 0
        node.device_pages = self.pool.alloc(needed)
        self.device_leaves.append(node)
        return needed

    def match_prefix(self, tokens):
        node = self.host_nodes.get(tuple(tokens[: 8 * PAGE]))
        return self.load_back(node) if node is not None else 0


class RowParallelLinear(torch.nn.Module):
    def __init__(self, rank, world):
        super().__init__()
        full = torch.randn(HIDDEN, HIDDEN, generator=torch.Generator().manual_seed(7))
        self.shard = HIDDEN // world
        self.weight = full[rank * self.shard : (rank + 1) * self.shard]
        self.rank = rank

    def forward(self, x):
        part = x[:, self.rank * self.shard : (self.rank + 1) * self.shard] @ self.weight
        dist.all_reduce(part)  # WAITS
        return torch.tanh(part)


class TinyTPModel(torch.nn.Module):
    def __init__(self, rank, world):
        super().__init__()
        self.embed = torch.randn(VOCAB, HIDDEN, generator=torch.Generator().manual_seed(3))
        self.layers = torch.nn.ModuleList(RowParallelLinear(rank, world) for _ in range(2))

    def forward(self, extend_tokens):
        h = self.embed[extend_tokens]
        for layer in self.layers:
            h = layer(h)  # WAITS
        return h


class Scheduler:
    def __init__(self, rank, world):
        self.pool = DevicePool(POOL_PAGES, STREAM_LAG[rank])
        self.tree = UnifiedRadixCache(self.pool)
        self.model = TinyTPModel(rank, world)

    def run_prefill(self, tokens):
        prefix_len = self.tree.match_prefix(tokens)
        extend = torch.tensor(tokens[prefix_len:])
        with torch.no_grad():
            hidden = self.model(extend)  # WAITS
        return prefix_len, len(extend), hidden[-1].sum().item()


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    sched = Scheduler(rank, world)
    # a running decode request holds two pages, locked in the tree
    decode_node = Node(list(range(2 * PAGE)), sched.pool.alloc(2 * PAGE), lock_ref=1)
    sched.tree.device_leaves.append(decode_node)
    # the previous request finished: its three pages are released asynchronously
    sched.pool.release_async(sched.pool.alloc(3 * PAGE))
    # the next request's 32-token prefix lives on host (evicted to L2 earlier)
    request = [(5 * i + 1) % VOCAB for i in range(10 * PAGE)]
    sched.tree.host_nodes[tuple(request[: 8 * PAGE])] = Node(request[: 8 * PAGE])

    sched.pool.tick()  # one scheduler iteration: poll the free events
    prefix_len, extend_len, out = sched.run_prefill(request)  # WAITS
    print(f"rank {rank}: prefix {prefix_len}, extend {extend_len}, output {out:.4f}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()  # WAITS
    dist.destroy_process_group()
