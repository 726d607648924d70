"""OpenPipe ART native FLA context parallelism, fixed: the chain's final state is broadcast from the owner's global rank.

Source: OpenPipe/ART issue #919, PR #920 ("Broadcast native FLA CP chain state from the group's global owner rank");
modelled on ``src/art/megatron/gdn/fla_cp.py`` ``_broadcast_chain_final_state``.

The gated-delta (GDN) layers split the sequence over a context-parallel group; after the chunked scan the last CP
member owns the chain's final recurrent state and broadcasts it to the others. With tensor parallel 2 on four ranks
the CP groups are ``{0, 2}`` and ``{1, 3}``. The PR's fix translates the CP-local index through
``dist.get_global_rank(group, cp_size - 1)``, so each group broadcasts from its own last member (rank 2 and rank 3),
and every rank reaches the tensor-parallel all-reduce.
"""

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 4
TIMEOUT = 15

TP = 2


def build_groups():
    """Megatron order, TP innermost: TP groups {0,1},{2,3}; CP groups {0,2},{1,3}."""
    world, rank = dist.get_world_size(), dist.get_rank()
    tp_group = cp_group = None
    for start in range(0, world, TP):
        g = dist.new_group(list(range(start, start + TP)))
        if rank in range(start, start + TP):
            tp_group = g
    for offset in range(TP):
        ranks = list(range(offset, world, TP))
        g = dist.new_group(ranks)
        if rank in ranks:
            cp_group = g
    return tp_group, cp_group


def chunk_scan(x, decay):
    state = torch.zeros(x.shape[1])
    for row in x:
        state = decay * state + row
    return state


def _broadcast_chain_final_state(state, cp_group):
    cp_size = dist.get_world_size(cp_group)
    owner = dist.get_global_rank(cp_group, cp_size - 1)  # the last CP member, as a global rank
    dist.broadcast(state, src=owner, group=cp_group)
    return state


def gdn_forward(x, tp_group, cp_group):
    local_state = chunk_scan(x, decay=0.9)
    final_state = _broadcast_chain_final_state(local_state.clone(), cp_group)
    out = x @ torch.diag(final_state)
    dist.all_reduce(out, group=tp_group)
    return out


def worker():
    torch.manual_seed(dist.get_rank())
    tp_group, cp_group = build_groups()
    x = torch.randn(6, 4)
    out = gdn_forward(x, tp_group, cp_group)
    print(f"rank {dist.get_rank()}: GDN forward done, norm {out.norm().item():.4f}", flush=True)


if __name__ == "__main__":
    from datetime import timedelta

    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
