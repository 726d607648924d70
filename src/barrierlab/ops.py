"""One row per ``torch.distributed`` operation: what the recorder does with it, what the rules require of it,
and what it orders.

Every reader of ops — the recorder (which functions it wraps and numbers), lint (which calls every rank must
make), the diagnosis (which calls pair by position, which need equal sizes), the timeline and the live view —
derives its sets from :data:`OPS` through the functions at the bottom, so an op is never known to one of them
and unknown to another. ``tests/test_ops.py`` compares the table with torch 2.13's public
``torch.distributed`` names, so an op added to or removed from torch fails loudly.

Standard library only: lint imports this module without torch.

Ordering columns (``gloo`` and ``nccl``): for a *blocking* call (no ``async_op=True``), which ranks' arrival a
rank in a given role waits for before the call returns to Python:

``"all"``      every rank of the group has entered the call
``"root"``     the root (``src``/``dst``) has entered the call
``"parent"``   its parent in the backend's broadcast tree has entered (and so, transitively, the root); in
               gloo's broadcast a non-root also sends to its own children, and waits for them
               (``ordering`` draws both from the tree)
``"children"`` some ranks other than the root have entered (below it in a broadcast tree; its neighbours
               in gloo's ring reduce, which ones depending on the tensor's size); nothing is said of the root
``"peer"``     the other side of a point-to-point call has posted its matching call
``"none"``     nothing: the call can return before any other rank arrives
``None``       not established yet (no measurement on gloo, no cited source for NCCL)

On gloo the columns come from measurement (``tests/test_ops_ordering.py`` runs each op on 4 ranks, 4-element
tensors, root 1, with each rank in turn 0.6 s late): gloo's sends wait for the receiver, so a tree's root
waits for its children. Object collectives are several tensor collectives in a row, so the waits of one
feed the next: at 4 ranks the root of ``broadcast_object_list`` waits for every rank (its second broadcast
waits for children that forwarded the first); a deeper tree (8+ ranks) holds it for two levels only.
On NCCL they describe the *host* (the Python thread), from torch 2.13's source, cited per row in
``nccl_source``: a collective returns once it is enqueued on a CUDA stream, and a blocking call's
``work.wait()`` makes the current stream wait, not the host (``Work.wait``'s docstring,
torch/csrc/distributed/c10d/init.cpp), so it orders nothing on the host until a synchronising call —
``barrier`` (which blocks the CPU thread), or a ``.item()``/``.cpu()`` of a received tensor, as the object
collectives do. The columns take the group's NCCL communicator as formed: its first collective, without
``init_process_group(device_id=...)``, forms it and holds every member (``ordering.Order(formed=False)``).
With ``TORCH_NCCL_BLOCKING_WAIT=1`` every wait blocks the host; not modelled. CUDA streams
(what the GPU orders) are not modelled either.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

#: Kinds of op.
COLLECTIVE = "collective"  # every rank of the group calls it; calls pair by position in the group
OBJECT_COLLECTIVE = "object collective"  # a collective of pickled objects, made of tensor collectives
POINT_TO_POINT = "p2p"  # one rank sends, one receives
GROUP = "group"  # creates process groups; a collective of the parent group
CHECKPOINT = "checkpoint"  # torch.distributed.checkpoint (DCP): collectives of the whole group inside

#: Roles a rank can play in one call.
ANY = "any"
ROOT = "root"  # src of broadcast/scatter, dst of reduce/gather
NON_ROOT = "non-root"
SENDER = "sender"
RECEIVER = "receiver"

_EMPTY: Mapping[str, str | None] = MappingProxyType({})


@dataclass(frozen=True)
class Op:
    """One torch.distributed operation.

    ``recorded``: the recorder wraps ``torch.distributed.<name>`` and writes an event for each call;
    ``numbered``: its calls are numbered per rank in the ledger (collectives; point-to-point calls are not,
    their peers differ by rank). ``every_rank``: every rank of the group must make the call, in the same order.
    ``same_shape``: its tensors must have the same sizes and dtypes on every rank. ``equalizing``: after it,
    its first argument holds the same data on every rank (so a condition on it is not rank-dependent).
    ``in_place``: one tensor is both input and output, so the sizes torch's flight recorder keeps for it are
    comparable across ranks.
    ``object_list``: the argument that holds the call's list of objects (the recorder records its length);
    ``same_length``: that list must have the same length on every rank.
    ``outputs``: the argument that holds the list of tensors the call writes into, one per rank: the recorder
    records when one tensor fills several of its slots (``[t] * world_size``: each slot shows what was written
    last, pytorch/pytorch issue #14632).
    ``blocks``: an all-to-all: each rank sends one block to every rank of the group, and the block rank i sends
    rank j must have the size rank j expects from rank i. Its value names the arguments that give the blocks'
    sizes — ``("output_split_sizes", "input_split_sizes")``, rows per rank, equal blocks when not given — or is
    ``("lists",)`` when each block is its own tensor in an output and an input list.
    ``underlying``: the gloo collective the call starts with, when it differs from the name — calls whose
    underlying ops match can pair silently. ``inner``: the tensor collectives an object collective makes, in
    order (why one call can take several positions in torch's flight record). ``gloo``/``nccl``: who a rank
    waits for, by role (see the module docstring). ``source``: where the facts of the row come from.
    ``root``: a rooted call's argument that names its root (``src`` or ``dst``; ``group_src``/``group_dst``
    in group ranks); ``default_root``: the global rank that is the root when the call names none (torch 2.13:
    0 for gather, scatter and the rooted object collectives, ``if dst is None and group_dst is None: dst = 0``;
    None where torch refuses the call: broadcast and reduce).
    """

    name: str
    kind: str
    recorded: bool = True
    numbered: bool = True
    every_rank: bool = True
    same_shape: bool = False
    equalizing: bool = False
    in_place: bool = False
    object_list: str | None = None
    same_length: bool = False
    outputs: str | None = None
    blocks: tuple[str, ...] = ()
    underlying: str | None = None
    inner: tuple[str, ...] = ()
    roles: tuple[str, ...] = (ANY,)
    gloo: Mapping[str, str | None] = field(default_factory=lambda: _EMPTY)
    nccl: Mapping[str, str | None] = field(default_factory=lambda: _EMPTY)
    source: str = ""
    nccl_source: str = ""
    root: str | None = None
    default_root: int | None = None
    #: the call reduces with an ``op=`` (a ``ReduceOp``, SUM when not given): ranks must pass the same one
    reduces: bool = False


def _waits(**by_role: str | None) -> Mapping[str, str | None]:
    return MappingProxyType({role.replace("_", "-"): value for role, value in by_role.items()})


_ROOTED = (ROOT, NON_ROOT)
_P2P = (SENDER, RECEIVER)
_C10D = "torch/distributed/distributed_c10d.py"


#: Why a blocking tensor collective orders nothing on the host on NCCL.
_NCCL_ENQUEUED = (
    f"{_C10D} {{name}}: the blocking call is the async one followed by work.wait(); Work.wait "
    "(torch/csrc/distributed/c10d/init.cpp, its docstring): 'calling wait() is the same as calling synchronize(): "
    "Letting the current stream block on the completion of the NCCL work' - the stream waits, not the host"
)


def _collective(name: str, **options) -> Op:
    options.setdefault("gloo", _waits(any="all"))
    roles = options.get("roles", (ANY,))
    options.setdefault("nccl", _waits(**{role.replace("-", "_"): "none" for role in roles}))
    options.setdefault("nccl_source", _NCCL_ENQUEUED.format(name=name))
    return Op(name, COLLECTIVE, **options)


def _same(name: str, **options) -> Op:
    return _collective(name, same_shape=True, **options)


OPS: tuple[Op, ...] = (
    _collective(
        "barrier",
        source=f"{_C10D} barrier; gloo: a dissemination barrier",
        nccl=_waits(any="all"),
        nccl_source=f"{_C10D} barrier, its docstring: "
        "'ProcessGroupNCCL now blocks the cpu thread till the completion of the barrier collective'",
    ),
    _collective(
        "monitored_barrier",
        underlying="monitored_barrier",
        nccl=_EMPTY,
        nccl_source=f"{_C10D} monitored_barrier, its docstring: 'only supported with the GLOO backend'",
        source=f"{_C10D} monitored_barrier: rank 0 waits for every rank, the others for rank 0's answer; gloo only",
    ),
    _same("all_reduce", equalizing=True, reduces=True, in_place=True, source=f"{_C10D} all_reduce"),
    _same("all_reduce_coalesced", equalizing=True, reduces=True, in_place=True, source=f"{_C10D} all_reduce_coalesced"),
    _same(
        "broadcast",
        root="src",
        equalizing=True,
        in_place=True,
        roles=_ROOTED,
        gloo=_waits(root="children", non_root="parent"),
        source=f"{_C10D} broadcast; gloo sends along a tree and a send waits for its receiver: the root waits "
        "for its direct children (measured: with root 1 of 4, for ranks 2 and 3, not 0)",
    ),
    _same("all_gather", equalizing=True, outputs="tensor_list", source=f"{_C10D} all_gather"),
    _same("all_gather_into_tensor", equalizing=True, underlying="all_gather", source=f"{_C10D} all_gather_into_tensor"),
    _same("all_gather_single", equalizing=True, underlying="all_gather", source=f"{_C10D} all_gather_single"),
    _same("all_gather_coalesced", equalizing=True, underlying="all_gather", source=f"{_C10D} all_gather_coalesced"),
    _same(
        "_all_gather_base",
        equalizing=True,
        underlying="all_gather",
        source=f"{_C10D} _all_gather_base (deprecated alias)",
    ),
    _same(
        "reduce",
        reduces=True,
        root="dst",
        in_place=True,
        roles=_ROOTED,
        gloo=_waits(root="all", non_root="children"),
        source=f"{_C10D} reduce; gloo/reduce.cc reduces along a ring (a reduce-scatter between neighbours, then each "
        "rank sends its chunk to the root), skipping empty segments: a non-root waits for other non-roots (measured), "
        "which ones depending on the tensor's size, so the ordering model gives it no edge",
    ),
    _collective(
        "gather",
        root="dst",
        default_root=0,
        roles=_ROOTED,
        outputs="gather_list",
        gloo=_waits(root="all", non_root="root"),
        source=f"{_C10D} gather",
    ),
    _collective(
        "scatter",
        root="src",
        default_root=0,
        roles=_ROOTED,
        gloo=_waits(root="all", non_root="root"),
        source=f"{_C10D} scatter",
    ),
    _collective("reduce_scatter", reduces=True, source=f"{_C10D} reduce_scatter"),
    _same(
        "reduce_scatter_tensor",
        reduces=True,
        underlying="all_reduce",
        source=f"{_C10D} reduce_scatter_tensor; ProcessGroupGloo::_reduce_scatter_base runs "
        "reduce_scatter_tensor_coalesced: an allreduce of a copy of the input, then this rank's chunk",
    ),
    _same(
        "reduce_scatter_single",
        reduces=True,
        underlying="all_reduce",
        source=f"{_C10D} reduce_scatter_single (on gloo an allreduce, as reduce_scatter_tensor: measured, it pairs with "
        "an all_reduce and both finish)",
    ),
    _same(
        "_reduce_scatter_base",
        reduces=True,
        underlying="all_reduce",
        source=f"{_C10D} _reduce_scatter_base (deprecated alias; on gloo an allreduce, as reduce_scatter_tensor)",
    ),
    _collective(
        "all_to_all",
        blocks=("lists",),
        outputs="output_tensor_list",
        source=f"{_C10D} all_to_all: input_tensor_list[j] goes to rank j, output_tensor_list[i] comes from rank i",
    ),
    _collective(
        "all_to_all_single",
        blocks=("output_split_sizes", "input_split_sizes"),
        source=f"{_C10D} all_to_all_single, its docstring: without split sizes the tensors are split equally "
        "(measured on 2.13 gloo: the elements, even a dim 0 of 5 rows over 2 ranks); gloo's tcp transport "
        "(gloo/transport/tcp/pair.cc) aborts the process when a block received is larger than the buffer for it "
        "('Received data size doesn't match expected size', measured on 2.13)",
    ),
    # Object collectives: pickled objects sent as byte tensors, sizes first.
    Op(
        "all_gather_object",
        OBJECT_COLLECTIVE,
        equalizing=True,
        object_list="object_list",
        underlying="all_gather",
        inner=("all_gather", "all_gather"),
        gloo=_waits(any="all"),
        nccl=_waits(any="all"),
        source=f"{_C10D} all_gather_object: all_gather of the sizes, then of the padded bytes",
        nccl_source=f"{_C10D} all_gather_object: 'max_object_size = int(max(object_size_list).item())' after the "
        "all_gather of the sizes: .item() copies to the host, so the host waits for every rank's size",
    ),
    Op(
        "gather_object",
        OBJECT_COLLECTIVE,
        root="dst",
        default_root=0,
        underlying="all_gather",
        inner=("all_gather", "gather"),
        roles=_ROOTED,
        gloo=_waits(root="all", non_root="all"),
        nccl=_waits(root="all", non_root="all"),
        source=f"{_C10D} gather_object: all_gather of the sizes (every rank waits for every rank), then gather",
        nccl_source=f"{_C10D} gather_object: 'max_object_size = int(max(object_size_list).item())' on every rank "
        "after the all_gather of the sizes",
    ),
    Op(
        "broadcast_object_list",
        OBJECT_COLLECTIVE,
        root="src",
        default_root=0,
        equalizing=True,
        object_list="object_list",
        same_length=True,
        underlying="broadcast",
        inner=("broadcast", "broadcast"),
        roles=_ROOTED,
        gloo=_waits(root="all", non_root="parent"),
        nccl=_waits(root="none", non_root="root"),
        source=f"{_C10D} broadcast_object_list: broadcast of the sizes, then of the bytes (gloo root: measured at 4 "
        "ranks; see the module docstring); its docstring: 'each rank must provide lists of equal sizes' (the sizes "
        "tensor has one element per object: lists of other lengths make gloo abort or time out)",
        nccl_source=f"{_C10D} broadcast_object_list: the source rank only serialises and broadcasts (no .item() or "
        ".cpu() on its branch); the others call 'torch.sum(object_sizes_tensor).item()' after the broadcast of the "
        "sizes, so they wait for the source",
    ),
    Op(
        "scatter_object_list",
        OBJECT_COLLECTIVE,
        root="src",
        default_root=0,
        object_list="scatter_object_output_list",
        underlying="broadcast",
        inner=("broadcast", "scatter", "scatter"),
        roles=_ROOTED,
        gloo=_waits(root="all", non_root="all"),
        nccl=_waits(root="none", non_root="root"),
        source=f"{_C10D} scatter_object_list: broadcast of the largest size, scatter of the bytes and sizes",
        nccl_source=f"{_C10D} scatter_object_list: every rank calls 'max_tensor_size.item()' after the broadcast "
        "from the source: the others wait for the source; the source reads its own tensor, and nothing it does "
        "needs a receiver to have arrived, so no order is assumed",
    ),
    # Process groups: collectives of the parent group (new_group needs every rank of the default group).
    Op(
        "new_group",
        GROUP,
        gloo=_waits(any="all"),
        source=f"{_C10D} new_group: 'requires that all processes in the main group enter'; gloo: measured",
    ),
    Op(
        "new_subgroups",
        GROUP,
        recorded=False,
        inner=("new_group",),
        source=f"{_C10D} new_subgroups: one new_group per subgroup (those calls are recorded)",
    ),
    Op(
        "new_subgroups_by_enumeration",
        GROUP,
        recorded=False,
        inner=("new_group",),
        source=f"{_C10D} new_subgroups_by_enumeration: one new_group per subgroup (those calls are recorded)",
    ),
    Op("split_group", GROUP, source=f"{_C10D} split_group: every rank of the parent group calls it"),
    Op("shrink_group", GROUP, source=f"{_C10D} shrink_group: the remaining ranks of the group call it"),
    # Point-to-point: not numbered (the peers differ by rank), never required of every rank.
    *(
        Op(
            name,
            POINT_TO_POINT,
            numbered=False,
            every_rank=False,
            roles=_P2P,
            gloo=_waits(sender="peer", receiver="peer") if name in ("send", "recv") else _EMPTY,
            nccl=_waits(sender="none", receiver="none") if name in ("send", "recv") else _EMPTY,
            source=f"{_C10D} {name}",
            nccl_source=_NCCL_ENQUEUED.format(name=name) if name in ("send", "recv") else "",
        )
        for name in ("send", "recv", "isend", "irecv", "batch_isend_irecv")
    ),
    *(
        Op(
            name,
            POINT_TO_POINT,
            numbered=False,
            every_rank=False,
            roles=_P2P,
            object_list="object_list",
            inner=("send", "send") if name == "send_object_list" else ("recv", "recv"),
            gloo=_waits(sender="peer", receiver="peer"),
            nccl=_waits(sender="none", receiver="peer"),
            source=f"{_C10D} {name}: the sizes, then the bytes",
            nccl_source=f"{_C10D} send_object_list: '.pop().wait()' (Work.wait: the stream waits, not the host); "
            "recv_object_list: 'torch.sum(object_sizes_tensor).item()' after receiving the sizes",
        )
        for name in ("send_object_list", "recv_object_list")
    ),
    # torch.distributed.checkpoint: collectives of the whole group inside (planning, metadata, the end).
    *(
        Op(
            name,
            CHECKPOINT,
            recorded=False,
            numbered=False,
            source=f"torch/distributed/checkpoint/state_dict_{'saver' if 'save' in name else 'loader'}.py {name}",
        )
        for name in ("save", "load", "async_save", "save_state_dict", "load_state_dict")
    ),
)

BY_NAME: Mapping[str, Op] = MappingProxyType({op.name: op for op in OPS})

#: Public callables of ``torch.distributed`` that are not operations between ranks (queries, set-up,
#: teardown, helpers). With :data:`OPS` they cover every public function torch 2.13 exports.
NOT_OPS = frozenset(
    {
        "breakpoint",  # a debugging aid (pdb on one rank; the others wait in a barrier it makes)
        "destroy_process_group",
        "get_backend",
        "get_backend_config",
        "get_default_backend_for_device",
        "get_global_rank",
        "get_group_rank",
        "get_node_local_rank",
        "get_pg_count",
        "get_process_group_ranks",
        "get_rank",
        "get_world_size",
        "init_device_mesh",
        "init_process_group",
        "is_available",
        "is_backend_available",
        "is_gloo_available",
        "is_initialized",
        "is_mpi_available",
        "is_nccl_available",
        "is_torchelastic_launched",
        "is_ucc_available",
        "is_xccl_available",
        "record_comm",  # a context manager naming collectives for the profiler
        "register_rendezvous_handler",
        "rendezvous",
        "supports_complex",
    }
)


def names(*, kinds: tuple[str, ...] | None = None, **columns: bool) -> frozenset[str]:
    """Names of the ops of the given ``kinds`` whose boolean columns have the given values:
    ``names(recorded=True, numbered=True)`` is what the recorder numbers."""
    return frozenset(
        op.name
        for op in OPS
        if (kinds is None or op.kind in kinds) and all(getattr(op, key) == value for key, value in columns.items())
    )


def underlying(name: str) -> str:
    """The gloo collective a call of ``name`` starts with (itself unless the table says otherwise)."""
    op = BY_NAME.get(name)
    return op.underlying if op is not None and op.underlying else name


def waits_for_every_rank(backend: str = "gloo") -> frozenset[str]:
    """Ops every role of which leaves a blocking call only once every rank of the group has entered it."""
    return frozenset(
        op.name
        for op in OPS
        if all(_column(op, backend).get(role) == "all" for role in op.roles) and _column(op, backend)
    )


def _column(op: Op, backend: str) -> Mapping[str, str | None]:
    if backend not in ("gloo", "nccl"):
        raise ValueError(f"backend must be 'gloo' or 'nccl', not {backend!r}")
    return op.gloo if backend == "gloo" else op.nccl


# The sets the readers use, derived once.
#: Wrapped by the recorder and numbered per rank: the calls that pair by position.
NUMBERED = names(recorded=True, numbered=True)
#: Wrapped by the recorder, not numbered: point-to-point calls.
RECORDED_P2P = names(kinds=(POINT_TO_POINT,), recorded=True)
#: Calls every rank of a group must make (lint's rule), recorded or not.
EVERY_RANK = names(kinds=(COLLECTIVE, OBJECT_COLLECTIVE, GROUP), every_rank=True)
#: Collectives with one root for the whole group (``src`` of broadcast/scatter, ``dst`` of reduce/gather, and
#: their object variants): every rank must name the same one.
ROOTED = frozenset(op.name for op in OPS if op.roles == _ROOTED and op.kind in (COLLECTIVE, OBJECT_COLLECTIVE))


#: Collectives from which gloo returns at once when every tensor is empty (no element): measured on 2.13 with
#: one rank 1 s late, the others left an all_reduce or all_gather of ``torch.empty(0)`` at once; a broadcast of
#: one, and a barrier, held them (attack11 a15); so did all_gather_into_tensor, reduce_scatter_tensor,
#: all_reduce_coalesced, and reduce at its root (attack12 r2), and reduce_scatter's list form (attack20 a20;
#: all_to_all, all_to_all_single, gather and scatter of empty tensors do wait). The model gives those no edges.
GLOO_EMPTY_RETURNS = frozenset(
    {
        "all_reduce",
        "reduce_scatter",
        "all_gather",
        "all_gather_into_tensor",
        "_all_gather_base",
        "reduce_scatter_tensor",
        "_reduce_scatter_base",
        "all_reduce_coalesced",
        "reduce",
    }
)


def root_of(event) -> int | None:
    """The global rank a recorded rooted call (an event: ``name``, ``peer``, ``group_ranks``) had as its root:
    ``src``/``dst`` as given; ``group_src``/``group_dst`` through its group's ranks; else the op's
    ``default_root`` (rank 0 for a ``gather`` or ``broadcast_object_list`` that names none); None if unknown."""
    for key in ("src", "dst"):
        if key in event.peer:
            return event.peer[key]
    for key in ("group_src", "group_dst"):
        if key in event.peer:
            ranks, index = event.group_ranks, event.peer[key]
            if not ranks:  # the default group's ranks are the global ones; another group's are not known
                return index if getattr(event, "group", None) is None else None
            return ranks[index] if isinstance(index, int) and 0 <= index < len(ranks) else None
    op = BY_NAME.get(event.name)
    return op.default_root if op is not None else None


#: Collectives whose tensors must have the same sizes and dtypes on every rank.
SAME_SHAPE = names(same_shape=True)
#: Calls whose list of objects must have the same length on every rank.
SAME_LENGTH = names(same_length=True)
#: All-to-alls: every rank's block for every other rank must have the size that rank expects (``Op.blocks``).
BLOCKS: Mapping[str, tuple[str, ...]] = MappingProxyType({op.name: op.blocks for op in OPS if op.blocks})
#: The arguments that give an all-to-all's block sizes (the recorder records them as given).
SPLIT_ARGUMENTS = ("output_split_sizes", "input_split_sizes")
#: One tensor is input and output: sizes in torch's flight record are comparable across ranks.
IN_PLACE = names(in_place=True)
#: After these, the call's first argument holds the same value on every rank.
EQUALIZING = names(equalizing=True)
#: torch.distributed.checkpoint functions (collectives of the whole group).
CHECKPOINT_OPS = names(kinds=(CHECKPOINT,))
#: Where each of them is defined, as its row's ``source`` names it — (path from torch's parent folder, function)
#: -> its name: a collective made inside one was made by the learner's call of it (``dcp.save``).
CHECKPOINT_ENTRIES: Mapping[tuple[str, str], str] = MappingProxyType(
    {tuple(op.source.split(" ", 1)): op.name for op in OPS if op.kind == CHECKPOINT}
)
#: Blocking collectives that release every rank together on gloo (a release line on the timeline).
EVERY_RANK_ON_GLOO = waits_for_every_rank("gloo")
#: Every point-to-point call.
POINT_TO_POINT_OPS = names(kinds=(POINT_TO_POINT,))
