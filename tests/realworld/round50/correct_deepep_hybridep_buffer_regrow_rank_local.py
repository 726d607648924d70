"""Modelled on deepseek-ai/DeepEP issue #604 ("Hybrid-EP has hang and precision issues in SFT training with variable
sequence lengths"; ``deep_ep/hybrid_ep_buffer.py`` ``HybridEPBuffer.update_template_config`` /
``update_kernel_config``, the C++ ``HybridEPBuffer::update_buffer`` with its ``allgather_obj.update(buffer_config)``,
and ``dispatch``'s routing-map ``all_gather_into_tensor``), with the group-wide token count NVIDIA-NeMo/Automodel
PR #3641 all-reduces before HybridEP dispatch.

What the code does: two expert-parallel ranks run the MoE layer of an SFT model, one expert per rank. The hybrid-EP
buffer is sized for ``max_num_of_tokens_per_rank`` tokens and registered with the peers at construction (an
all-gather of the ranks' buffer handles over the runtime's own communicator, standing in for the IPC-address
exchange and its ``allgather_obj``). Before each dispatch the layer
calls ``update_template_config``; when the template no longer fits, ``update_buffer`` reallocates the buffer and
exchanges the new handles with an all-gather. ``dispatch`` pads the routing map and hidden states to the buffer size
and all-gathers them; each rank applies its expert to the tokens routed to it and ``combine`` sums the expert
outputs back with an all-reduce. Sequence lengths vary per rank: 6 and 5 tokens in step 1, 6 and 12 in step 2.

The correct version of ``buggy_deepep_hybridep_buffer_regrow_rank_local``: the template is the EP group's maximum
token count (an all-reduce MAX), so in step 2 both ranks grow the buffer to 12 tokens, exchange their handles
together, and pad their routing maps to the same length.
"""

import datetime

import torch
import torch.distributed as dist

KIND = "correct"
WORLD_SIZE = 2
TIMEOUT = 15

HIDDEN = 6
NUM_EXPERTS = 2
SEQ_LENS = ((6, 6, 7), (5, 12, 6))  # tokens per step on rank 0 and rank 1


class BufferConfig:
    def __init__(self, hidden_dim, max_num_of_tokens_per_rank):
        self.hidden_dim = hidden_dim
        self.max_num_of_tokens_per_rank = max_num_of_tokens_per_rank


class HybridEPBuffer:
    def __init__(self, group, hidden_dim, max_num_of_tokens_per_rank):
        self.group = group
        self.rank = dist.get_rank(group)
        self.group_size = dist.get_world_size(group)
        # the handle exchange runs over its own communicator (the C++ runtime's allgather object)
        self.handle_group = dist.new_group(dist.get_process_group_ranks(group))
        self.config = BufferConfig(hidden_dim, max_num_of_tokens_per_rank)
        self._allocate(self.config)
        self.exchange_ipc_address()

    def _allocate(self, config):
        self.token_buffer = torch.zeros(config.max_num_of_tokens_per_rank, config.hidden_dim)
        self.capacity = config.max_num_of_tokens_per_rank

    def exchange_ipc_address(self):
        handle = {"rank": self.rank, "capacity": self.capacity, "address": self.token_buffer.data_ptr()}
        handles = [None] * self.group_size
        dist.all_gather_object(handles, handle, group=self.handle_group)
        self.peer_handles = handles

    def update_buffer(self, config):
        need_reallocate = config.max_num_of_tokens_per_rank > self.capacity
        if need_reallocate:
            self._allocate(config)
            self.exchange_ipc_address()
        self.config = config
        return need_reallocate

    def update_template_config(self, num_of_tokens_per_rank):
        group_max = torch.tensor([num_of_tokens_per_rank])
        dist.all_reduce(group_max, op=dist.ReduceOp.MAX, group=self.group)
        wanted = max(int(group_max.item()), self.capacity)
        config = BufferConfig(self.config.hidden_dim, wanted)
        self.update_buffer(config)
        return config

    def dispatch(self, hidden, routing_map):
        cap = self.config.max_num_of_tokens_per_rank
        pad = cap - hidden.shape[0]
        padded_map = torch.nn.functional.pad(routing_map, (0, 0, 0, pad), value=False)
        padded_hidden = torch.nn.functional.pad(hidden, (0, 0, 0, pad))
        global_map = torch.empty(cap * self.group_size, NUM_EXPERTS, dtype=torch.bool)
        dist.all_gather_into_tensor(global_map, padded_map, group=self.group)
        global_hidden = torch.empty(cap * self.group_size, hidden.shape[1])
        dist.all_gather_into_tensor(global_hidden, padded_hidden, group=self.group)
        return global_hidden, global_map

    def combine(self, expert_out, num_tokens):
        dist.all_reduce(expert_out, group=self.group)
        cap = self.config.max_num_of_tokens_per_rank
        return expert_out[self.rank * cap : self.rank * cap + num_tokens]


class MoELayer(torch.nn.Module):
    def __init__(self, buffer):
        super().__init__()
        self.buffer = buffer
        self.router = torch.nn.Linear(HIDDEN, NUM_EXPERTS)
        self.expert = torch.nn.Linear(HIDDEN, HIDDEN)  # this rank's local expert

    def forward(self, hidden):
        num_tokens = hidden.shape[0]
        top1 = self.router(hidden).argmax(dim=-1)
        routing_map = torch.nn.functional.one_hot(top1, NUM_EXPERTS).bool()
        self.buffer.update_template_config(num_tokens)
        global_hidden, global_map = self.buffer.dispatch(hidden, routing_map)
        mine = global_map[:, self.buffer.rank].unsqueeze(-1)
        expert_out = torch.where(mine, self.expert(global_hidden), torch.zeros_like(global_hidden))
        return hidden + self.buffer.combine(expert_out, num_tokens)


def worker():
    rank = dist.get_rank()
    group = dist.group.WORLD
    torch.manual_seed(0)
    layer = MoELayer(HybridEPBuffer(group, HIDDEN, max_num_of_tokens_per_rank=8))
    torch.manual_seed(10 + rank)
    layer.expert = torch.nn.Linear(HIDDEN, HIDDEN)
    gen = torch.Generator().manual_seed(rank)
    with torch.no_grad():
        for step, seq_len in enumerate(SEQ_LENS[rank], start=1):
            hidden = torch.randn(seq_len, HIDDEN, generator=gen)
            out = layer(hidden)
            print(f"rank {rank} step {step}: {seq_len} tokens, buffer {layer.buffer.capacity}, "
                  f"out {out.pow(2).mean().item():.4f}", flush=True)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=TIMEOUT))
    worker()
    dist.destroy_process_group()
