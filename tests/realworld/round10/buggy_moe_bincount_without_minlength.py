"""Expert-parallel MoE dispatch whose per-expert token counts come from ``torch.bincount`` without
``minlength``.

Modelled on the all-to-all token dispatchers of Megatron-LM (``megatron/core/transformer/moe/token_dispatcher.py``
``MoEAlltoAllTokenDispatcher.preprocess``: count the local tokens per expert, all-gather the counts over the
expert-parallel group, derive ``input_splits`` / ``output_splits``, then ``all_to_all``) and ByteDance-Seed/VeOmni
(``dispatch_preprocess``: ``torch.bincount(selected_experts.view(-1), minlength=num_global_experts)``, PR #896),
and on the review of XPU-Forces/mojo_opset PR #345 (``torch.bincount(expert_indices.flatten())`` "If the
randomly generated ``expert_indices`` do not cover all expert IDs ..."). ``torch.bincount``'s output has
``max(input) + 1`` bins unless ``minlength`` is given (pytorch/pytorch issue #71405 shows the length surprise).

Bug: the counts tensor is as long as the highest expert id a rank routed to. Rank 1's micro-batch routes no
token to the last expert, so it contributes 3 counts to the all-gather while rank 0 contributes 4; the
all-gather of the counts aborts rank 1 on a size mismatch (gloo checks that each message fits the receiving
buffer: rank 1's short message fits rank 0's slot, so rank 0 passes and loses its peer in the all-to-all).
"""

from datetime import timedelta

import torch
import torch.distributed as dist

KIND = "buggy"
WORLD_SIZE = 2
TIMEOUT = 20

NUM_EXPERTS = 4
HIDDEN = 8
MICRO_BATCHES = 3


class AlltoAllDispatcher:
    def __init__(self, num_experts):
        self.ep_size = dist.get_world_size()
        self.rank = dist.get_rank()
        self.num_experts = num_experts
        self.num_local_experts = num_experts // self.ep_size
        self.local = slice(self.rank * self.num_local_experts, (self.rank + 1) * self.num_local_experts)

    def preprocess(self, expert_ids):
        num_local_tokens_per_expert = torch.bincount(expert_ids)  # BUG
        gathered = torch.empty(self.ep_size * num_local_tokens_per_expert.numel(), dtype=torch.long)
        dist.all_gather_into_tensor(gathered, num_local_tokens_per_expert)  # WAITS
        num_global_tokens_per_expert = gathered.view(self.ep_size, self.num_experts)
        self.input_splits = num_local_tokens_per_expert.view(self.ep_size, -1).sum(1).tolist()
        self.per_source_local_expert = num_global_tokens_per_expert[:, self.local]
        self.output_splits = self.per_source_local_expert.sum(1).tolist()

    def dispatch(self, tokens, expert_ids):
        self.preprocess(expert_ids)  # WAITS
        self.order = torch.argsort(expert_ids, stable=True)
        received = torch.empty(sum(self.output_splits), tokens.shape[1])
        dist.all_to_all_single(received, tokens[self.order], self.output_splits, self.input_splits)  # WAITS
        # received rows are grouped by source rank, then by local expert: regroup by local expert
        chunks = list(received.split(self.per_source_local_expert.flatten().tolist()))
        n_src, n_loc = self.per_source_local_expert.shape
        self.by_expert = [torch.cat([chunks[s * n_loc + e] for s in range(n_src)]) for e in range(n_loc)]
        return self.by_expert

    def combine(self, expert_outputs):
        n_src, n_loc = self.per_source_local_expert.shape
        pieces = [list(out.split(self.per_source_local_expert[:, e].tolist())) for e, out in enumerate(expert_outputs)]
        back = torch.cat([pieces[e][s] for s in range(n_src) for e in range(n_loc)])
        returned = torch.empty(sum(self.input_splits), back.shape[1])
        dist.all_to_all_single(returned, back, self.input_splits, self.output_splits)
        out = torch.empty_like(returned)
        out[self.order] = returned
        return out


def build_experts():
    torch.manual_seed(0)
    router = torch.nn.Linear(HIDDEN, NUM_EXPERTS, bias=False)
    with torch.no_grad():
        router.weight.copy_(torch.eye(NUM_EXPERTS, HIDDEN))
    experts = torch.nn.ModuleList(torch.nn.Linear(HIDDEN, HIDDEN) for _ in range(NUM_EXPERTS))
    return router, experts


def micro_batch(rank, step):
    g = torch.Generator().manual_seed(1000 * rank + step)
    # rank 1's sequences are short and happen to route nothing to the last expert
    targets = torch.arange(12) % (NUM_EXPERTS if rank == 0 else NUM_EXPERTS - 1)
    x = 0.1 * torch.randn(12, HIDDEN, generator=g)
    x[torch.arange(12), targets] += 2.0
    return x


def moe_forward(dispatcher, router, experts, x):
    expert_ids = router(x).argmax(-1)
    groups = dispatcher.dispatch(x, expert_ids)  # WAITS
    outs = [experts[dispatcher.local][e](tokens) for e, tokens in enumerate(groups)]
    y = dispatcher.combine(outs)
    reference = torch.stack([experts[int(k)](row) for k, row in zip(expert_ids, x)])
    return y, reference


def worker():
    rank = dist.get_rank()
    router, experts = build_experts()
    dispatcher = AlltoAllDispatcher(NUM_EXPERTS)
    with torch.no_grad():
        for step in range(MICRO_BATCHES):
            y, reference = moe_forward(dispatcher, router, experts, micro_batch(rank, step))  # WAITS
            torch.testing.assert_close(y, reference)
    dist.barrier()
    if rank == 0:
        print("expert-parallel outputs match the dense reference")


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
