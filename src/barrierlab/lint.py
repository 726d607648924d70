"""Find torch.distributed collectives that only some ranks reach.

Every rank must call each collective (``barrier``, ``all_reduce``, ``broadcast``...)
the same number of times and in the same order. A collective that sits under
rank-dependent control flow waits until the timeout, or silently pairs with a
different call on the other ranks. This module reads source with :mod:`ast`
(stdlib only; nothing is imported or executed) and reports such calls.

Finding kinds:

* ``branch`` - under an ``if``/``elif``/``else``, ``x if c else y`` or ``and``/``or``
  whose condition is rank-dependent, or in a function decorated with a
  rank-named decorator such as ``@rank_zero_only``, mmcv/mmengine's ``master_only``, or a
  decorator of the file or of a followed module whose every call of the wrapped function
  sits under a rank-dependent test (or after a ``return`` under one).
* ``early-exit`` - after a ``return``/``raise``/``sys.exit()`` (rest of the function
  or cell) or ``continue``/``break`` (rest of the loop body) that only some ranks
  take. For ``break`` and ``return`` inside a loop the earlier part of the loop
  body is flagged too: the leaving ranks miss it on later iterations.
* ``rank-dependent-loop`` - inside a ``for``/``while``/comprehension whose iterable
  or condition is rank-dependent, or a plain collective in a loop under ``with Join([...])``
  (Join shadows only the collectives of the Joinables handed to it).
* ``hidden-collective`` - a call, in any of the situations above, to a function
  of the same file/notebook that reaches a collective, or one that registers what
  makes collectives later: an object of a class of the file whose methods reach one,
  added to a list or a trainer (``callbacks.append(...)``, ``add_callback(...)``),
  or, reported as a ``branch``, one of torch's DDP comm hooks (``register_comm_hook``).
* ``p2p-order`` - every rank makes a blocking ``send`` before its ``recv`` (or a ``recv``
  before its ``send``) outside any ``if``/``while``: each waits for a peer that waits
  for it (on gloo a blocking send returns once the receiver has posted its receive, per
  :mod:`barrierlab.ops`). See :class:`_Order`.
* ``file-race`` - a file written under a rank-dependent condition and read by the other
  ranks with nothing between that orders the write before the read (the ordering model of
  :mod:`barrierlab.ordering`, statically, for one function's straight-line code: a collective called with
  ``async_op=True`` orders nothing until a ``wait()`` of its handle), or a folder
  made under such a condition that the other ranks write into or list, or a file (``os.remove``, ``os.unlink``,
  ``Path.unlink``) or folder (``shutil.rmtree``) removed under such a condition with nothing between it and
  the other ranks' reads (before it, or after it: the ``else`` of the same test). A look at the file
  (``os.path.exists``, ``Path.is_file()``) is a read of its state. Also every rank's write to a file of its own in
  one folder (``os.path.join(folder, f"s{rank}")``) and, under a rank-dependent condition, a listing of the folder
  (``os.listdir``, ``glob.glob``, ``Path.iterdir``) or a read of another rank's file there, with nothing between that
  orders every rank's write (of a ``broadcast(src=0)`` torch guarantees only rank 0's; a gather or reduce orders
  them only for a reader on its ``dst``).
* ``size-mismatch`` - a collective whose tensor's size comes from the data (``torch.bincount``
  without ``minlength``, ``unique``, ``nonzero``, the keys of a dict filled from data), or a
  ``broadcast_object_list`` of a literal placeholder list on some ranks and another length on others, or an
  output list with one slot per rank of the world for an ``all_gather(_object)``/``gather(_object)`` on a group
  known to be smaller (``new_subgroups()``, ``new_group(ranks)``), or a tensor whose size comes from the rank
  (``torch.ones(4 if rank == 0 else 8)``, ``torch.zeros(n)`` with ``n`` assigned from the rank) handed to a
  collective whose tensors must have one shape on every rank (``ops.SAME_SHAPE``). See :class:`_Sizes`,
  :class:`_RankSizes` and :class:`_Agreement`.
* ``data-dependent-count`` - one collective per key of a dict whose keys come from the data (a loop
  over it, Lightning's ``log_dict(..., sync_dist=True)``).
* ``except-path`` - a collective inside an ``except`` handler (other than for ``ImportError``-like errors every
  rank meets alike): only the ranks whose ``try`` raised run it. Names a handler assigns (``failed = True``) are
  rank-dependent, so ``finally: if not failed: barrier()`` is a ``branch``.
* ``dtype-mismatch`` - ``torch.tensor(x)`` without ``dtype=`` handed to an all_reduce/all_gather/broadcast,
  where ``x`` adds up per-rank values or is a numpy scalar whose type a rank test picks. See :class:`_Agreement`.
* ``group-rank`` - a ``dst``/``src`` that is a rank within its ``group=`` (torch wants a global rank).
* ``root-only-list`` - a ``gather_list``/``object_gather_list``/``scatter_list`` built on every rank (torch raises
  on every rank but the root). See :class:`_Agreement`.
* ``non-member`` - a collective on ``group=g`` in a function that a rank outside ``g`` provably reaches (lint runs
  the function on sample worlds; a script's top level is not checked): torch.distributed warns and returns at once there, so the call orders and shares nothing on that
  rank (``dist.barrier(group=leaders)`` called by every rank). Quiet when membership or reachability is unknown.
* ``self-root`` - a ``broadcast``/``reduce``/``gather``/``scatter`` (or object variant) whose ``src``/``dst`` is
  each rank's own rank (``src=dist.get_rank()``, ``src=args.local_rank``): every rank takes itself for the root.
* ``different-roots`` - one of those calls on the default group (no ``group=``) with a ``src``/``dst`` computed from
  the rank's own global rank (``src=node_rank * per_node``), or chosen by a test on the rank (``src=0 if rank < 2
  else 1``, or a name assigned so, or given different constants under ``if rank ...``): the ranks of one world-wide
  call name different roots. Quiet when every choice is the same root.
* ``different-reduce-ops`` - a reducing collective (``all_reduce``, ``reduce``, ``reduce_scatter``...) whose ``op=``
  is rank-dependent (``op=ReduceOp.MAX if rank == 0 else ReduceOp.SUM``, or an ``op`` assigned so): gloo does not
  check that the ranks' ops agree, so every rank finishes and gets one result made with one rank's op, neither, or
  a mix, element by element (the diagnosis's ``different-reduce-ops``). Quiet when ``group=`` is rank-dependent too.
* ``store-key`` - a c10d store ``wait``/``get`` of one key per rank (over ``range(world_size)``) whose ``store.set``
  some ranks skip (under a rank-dependent ``if``, or after a rank-dependent ``continue``/``return``): the reader
  blocks until the store's timeout. See :class:`_StoreKeys`.
* ``set-order`` - a collective in a loop over a set that may hold strings (``set(...)``, a set literal, ``a - b`` of
  one, ``list(s)``), in the set's own order: under torchrun each worker has its own string hash seed, so the
  ranks' orders differ (``barrierlab.run``'s forked ranks share one and agree). ``sorted(s)`` is quiet.
  ``size-mismatch`` also covers an all_gather of a padded token batch (``batch["input_ids"]``).
* ``every-rank-mkdir`` - a function every rank runs makes a folder whose path is the same on every rank, where it
  must not exist yet (``os.makedirs(path)``, ``os.mkdir``, ``Path.mkdir()`` without ``exist_ok=True``): all but the
  first rank raise FileExistsError. See :class:`_SharedMakes`.
* ``detached-loss`` - a function whose result is backpropagated returns, under a branch on its data, a tensor
  made from constants (``torch.tensor(0.0, requires_grad=True)``): on a rank that takes it, the backward skips the
  collectives it makes on the others (DDP's gradient all_reduce). See :class:`_DetachedLosses`.
* ``unwaited-async`` - a collective called with ``async_op=True`` as a statement of its own: its Work handle is
  dropped, so no line waits for it before its tensors are read (OpenNMT-py issue #2295); on gloo a blocking
  barrier of its group later in the block completes it, which the finding then says. Also ``dist.isend``/
  ``dist.irecv`` as a statement of its own: on gloo the Work holds the message's buffer, and dropping it can lose
  the message (review72c M5).
* ``read-before-wait`` - ``work = dist.all_reduce(t, async_op=True)`` and then a use of ``t`` in the same block
  before ``work.wait()``: the call may not have written ``t`` yet (on gloo a worker thread does it), so each rank
  reads its own value, the other ranks' contribution, or a mix (review70b M1: 1, 2, 3, 4 where the sum was 10).
* ``lock-held`` - a collective made while holding a cross-process file lock (``with FileLock(path):``, a lock
  object assigned one, or a context manager of the file that takes one: ModelScope's ``processing_lock``): one rank
  holds it at a time, so the others wait to take the lock, outside any collective, while the holder waits in the
  collective for them. Quiet when the lock's path depends on the rank (each rank has its own lock).
* ``signal-handler`` - a collective made (directly or through functions of the file) by a function installed
  with ``signal.signal``: Python runs it in the process the signal reaches, between two bytecodes of whatever
  that rank is doing, so only the signalled ranks make the call, each at a point of its own (old Lightning's
  SLURM handler saved a checkpoint there; round 24).
* ``finalizer`` - a collective made (directly or through functions of the file) by a ``__del__`` method: it runs
  when the object's last reference goes, or when the garbage collector frees a cycle, at a moment of each
  rank's own (one rank keeps the object in a list, another drops it), so ranks reach it at different points of
  their programs, or one never does (pytorch/examples' ``AverageMeter.all_reduce`` moved into ``__del__``,
  round 14).
* ``generator-decorated`` - a context manager that makes a collective (a ``@contextmanager`` function of the file
  that reaches one, or ``main_process_first``) decorating a generator function: it wraps only the call that creates
  the generator, so its collectives run and its block ends before any of the body runs (round 18).
* ``discarded-output`` - a broadcast/broadcast_object_list/all_gather/all_gather_object/scatter_object_list
  whose output is a list or tensor made in the call (``broadcast_object_list([stats], src=0)``): what it receives is
  lost, and on the other ranks the name inside keeps its own value (pytorch/pytorch issue #56142).
* ``aliased-outputs`` - an all_gather/gather/all_to_all output list of one tensor repeated
  (``[torch.zeros_like(t)] * world_size``): every slot is the same tensor, so every slot shows the block written
  last (pytorch/pytorch issue #14632); shown at the line that builds the list.
* ``group-arguments`` - ``new_group``/``new_subgroups``/``new_subgroups_by_enumeration`` given arguments built
  from the rank (``get_rank()``, ``RANK``, a rank parameter, followed through the scope's names): torch wants every
  rank to pass the same ones. Quiet with ``use_local_synchronization=True``. See :class:`_GroupArguments`.
* ``collective-order`` - the branches of an ``if``/``elif``/``else`` on the rank make the same collectives with the
  same arguments in different orders: torch pairs them by position. ``file-race`` also covers a write (or folder)
  made after the writer's k-th collective and read by other ranks after at most k of theirs
  (``barrier(); save(p)`` / ``barrier(); load(p)``), and ``store-key`` a store wait cycle between branches. See
  :class:`_BranchPairs`.
* ``store-key`` also: a store ``get``/``wait`` of a constant key no line of the file sets (:class:`_StoreUnset`),
  and a store-based barrier (``elastic.utils.store.barrier``, ``_store_based_barrier``) with a constant key in code
  that runs more than once: only its first use waits (:class:`_ReusedStoreBarrier`).
* ``p2p-unmatched`` - a ``send``/``recv`` (or ``isend``/``irecv``, object variants) to or from a peer the code
  names when that peer's way through the same function (its rank tests evaluated per rank) makes no matching call;
  ``unwaited-async`` also covers an ``isend``/``irecv`` handle kept but never used again, and ``read-before-wait``
  a use of an ``irecv``'s tensor before its handle's ``wait()``. See :class:`_PointToPoint`.
* ``forked-collective`` - a collective in a child process the rank starts (``os.fork()``'s child branch, or
  ``multiprocessing.Process(target=f)`` where ``f`` reaches one without ``init_process_group``). See :class:`_Forked`.
* ``agreed-argument`` - a library object built with an argument from this rank's own values that decides which
  collectives it makes later (PowerSGDState's ``start_powerSGD_iter``, PostLocalSGDState's ``start_localSGD_iter``,
  PeriodicModelAverager's ``period``/``warmup_steps``): reported at the backward that runs the comm hook given it
  (or the averager's ``average_parameters``). See :data:`AGREED_ARGUMENTS` and :class:`_AgreedArguments`.
* ``diverged-module`` - a module changed under an ``if`` on the rank before ``DDP(module)`` wraps it in a way DDP's
  constructor checks instead of repairing: which parameters require grad (a freeze on some ranks), or which buffers
  it holds (a buffer registered as ``None`` and assigned on some ranks); or a module built from a size that differs
  between ranks (``DDP(TextClassifier(vocab_size))`` whose ``__init__`` passes it to ``nn.EmbeddingBag``). See
  :class:`_DivergedModule`. A function of the file under a decorator that runs it on some ranks only
  (``@rank_zero_only``) returns a rank-dependent value: None on the other ranks.
* ``unfrozen-after-wrap`` - parameters frozen before ``DDP(module)`` and set to require grad again after it: DDP
  registered its gradient all_reduce only for the parameters that required grad when it was built, so theirs stay
  each rank's own. See :class:`_UnfrozenAfterWrap`.
* ``shared-checkpoint-key`` - ``torch.distributed.checkpoint.save`` of a state with an entry under a string key the
  same on every rank whose value is the state of an object built from the rank: DCP writes one rank's copy of such
  an entry, so every rank loads it. See :class:`_SharedCheckpointKey`.
* ``branch`` also covers a DDP communication hook of the file whose collectives depend on a test of its bucket's
  gradient values (``if not torch.any(bucket.buffer()): return``): each rank's bucket holds its own gradients. See
  :class:`_CommHookGate`.

A loop exit (``break``/``return``/``continue``) or a ``while`` test on this rank's own model output (the
forward of a DDP/FSDP model, of a torch module of the file fed a rank-dependent input, or a function of the
file returning such output), or on what it computed from the batch of a ``for`` over a data loader (each
rank draws its own shard: ``tokens_seen += (labels != pad).sum()`` then ``break`` on it), is rank-dependent
unless that value went through an all_reduce/broadcast (or a function of the file that agrees it) first:
greedy decoding that stops at each rank's own end-of-sequence under ZeRO-3/FSDP. The same test as the left
operand of ``and``/``or`` (``bad or any_rank(bad)``) decides which ranks evaluate a collective on the right.

A condition is rank-dependent when it mentions ``get_rank()`` (any receiver),
``os.environ["RANK"]``/``LOCAL_RANK``/``os.getenv(...)``, a name, attribute or call
whose identifier has a ``rank``/``ordinal`` word or reads ``is_main``, ``is_master``,
``main_process``, ``master_process``, ``process_index``, ``is_global_zero``
(case-insensitive, camelCase too), a question to the file system (``os.path.exists``,
``isfile``/``isdir``, ``Path.exists``/``is_file``/``is_dir``, ``os.access``: ranks on other
nodes or behind a cache can see other files), a reading of the process's clock (``time.monotonic()``,
``time.time()``, ``datetime.now()``: each rank reads its own, at its own moment), a logger's level
(``logger.isEnabledFor(...)``: stacks set it per rank), a variable assigned (transitively, anywhere in
the same function or at module level, flow-insensitively) from such an
expression, ``self.<attr>`` assigned so in any method, or a call to a function of
the file that returns such an expression. Arguments of ``.to()``/``.cuda()``/
``torch.device()``/``DistributedSampler()``/``DDP()``/``FSDP()`` and keywords such as
``device=``/``device_ids=``/``map_location=`` do not propagate rank dependence:
they place data, they do not change control flow.

Balanced code is not flagged. For each ``if`` and each block, every combination of
the conditions it contains is simulated: comparisons of one expression with
integer constants are evaluated on sample rank values (negative constants such
as ``local_rank == -1`` mean "not distributed" and are not sampled), other
conditions are independent booleans. If, for every assignment of the
rank-independent conditions, all rank assignments produce the same sequence of
collectives and exits, the code is balanced. So an ``if``/``else`` with the same
collectives in the same order, the ``if not main: barrier() ... if main: barrier()``
pattern of ``main_process_first`` and the old Hugging Face ``local_rank not in
[-1, 0]`` pattern are quiet; differing branches are reported for the calls
``difflib`` cannot match between them.

Collectives: ``torch.distributed`` ``barrier``, ``monitored_barrier``, ``all_reduce``,
``broadcast``, ``all_gather``, ``reduce``, ``gather``, ``scatter``, ``reduce_scatter``,
``all_to_all``, their ``_object``/``_tensor``/``_single``/``_coalesced`` variants,
``new_group``/``new_subgroups`` and ``torch.distributed.checkpoint`` ``save``/
``load``/``async_save``/``save_state_dict``/``load_state_dict``. Names are resolved
through imports: ``import torch.distributed as dist``, ``from torch import
distributed``, ``from torch.distributed import barrier [as b]``, the full
``torch.distributed.barrier`` and an unimported ``dist.`` prefix. Two wrappers that
make collectives are treated as collectives by name on any receiver:
``main_process_first`` (barrierlab's makes an ``all_gather_object``, Accelerate's and
transformers' barriers) and ``wait_for_everyone`` (Accelerate); unconditional ``with
main_process_first():`` is correct usage and quiet, inside ``if rank == 0:`` it is
reported.

Framework collectives: :data:`FRAMEWORK_COLLECTIVES` is a documented, extendable table of library calls
that issue collectives inside (Accelerate ``accelerator.save_state``/``gather_for_metrics``/``backward``...,
Lightning ``trainer.strategy.barrier()``, ``self.all_gather`` in a ``LightningModule``,
``trainer.save_checkpoint``, ``fabric.barrier``, DeepSpeed ``model_engine.save_checkpoint``/``backward``,
detectron2 ``comm.synchronize``/``all_gather``/``gather``, mmengine ``mmengine.dist`` functions, HF
``trainer.evaluate``/``train``, DTensor ``full_tensor``/``redistribute``, ``torch.distributed.nn``'s autograd
collectives, ``DeviceMesh``/``init_device_mesh`` (a ``new_group`` per sub-group), ``ZeroRedundancyOptimizer.step``
outside ``with Join(...)``). A new iterator over a ``DataLoader`` whose dataset is an ``IterDataPipe`` counts as a
collective too (a gloo ``new_group`` and a seed broadcast). An entry matches by the receiver's
last identifier (``accelerator``, ``strategy``, ``trainer``, ``fabric``, ``model_engine``...), by the module
it is imported from, or by ``self`` in a subclass (within the file) of a named base; the finding says what
the call issues (``Accelerate: a barrier (wait_for_everyone) ...``). Append a ``FrameworkCollective`` to teach
lint another library.

DDP and FSDP: a model wrapped with ``DistributedDataParallel``/``DDP``/``FSDP`` (or ``accelerator.prepare``,
``fabric.setup``, ``fully_shard(model)``) is tracked by name in its function, as a ``self.`` attribute across
the class's methods, into nested functions and into the parameters of functions of the file it is passed
to. Calling it is taken as a collective (DDP's forward broadcasts the buffers, if any, and once rebuilds the
buckets; FSDP's forward all-gathers parameters), except inside ``with Join(...)`` and, for DDP, under ``torch.no_grad()`` /
``inference_mode`` when the file defines no buffers (no BatchNorm, ``register_buffer``); ``.backward()`` on a
value computed from its output is a collective (DDP's gradient all_reduce, issued from C++), except inside
``with Join(...)``, or inside ``with model.no_sync():`` when the loss was made in the same block (the forward
decides: a loss made outside it still synchronises).

Deliberately not flagged: point-to-point ``send``/``recv``/``isend``/``irecv``/
``batch_isend_irecv`` (they are meant to differ per rank; only the cycle of ``p2p-order``, a dropped or never-waited ``isend``/``irecv``
handle and, within one function, a named peer with no matching call on its side (``p2p-unmatched``) are
reported: peers computed from data or a loop, and exchanges split across functions, are not checked), ``init_process_group``/``destroy_process_group``, and calls on
arbitrary objects such as ``self.group.barrier()`` that no table entry names: their
receiver type is unknown and ``threading.Barrier``-like objects would be false positives.
Route them through a function of the file, or add a table entry, to have them checked.

Subgroups: a collective with ``group=`` under a rank-dependent ``if`` is quiet when every member of the
group takes the branch together, worked out by a small interpreter (:class:`_Ranks`) that runs the enclosing
function for every rank of sample worlds (groups kept in module globals by an init function, and
``init_device_mesh`` meshes sliced by dimension name, included); a group it cannot work out is treated like
the default group.

Library knowledge beyond collectives: :data:`RANK_HOOKS` lists methods a framework calls on some ranks only
(Lightning's ``prepare_data``): a collective reached from one is a ``branch`` finding. A torchmetrics metric
whose list states are gathered one element at a time (``add_state(..., default=[])`` without
``dist_reduce_fx="cat"`` in a metric class of the file, or a class of :data:`PER_ELEMENT_METRICS`) and whose
``update()`` runs in a rank-dependent loop is reported at its later ``compute()``/``sync()``
(``rank-dependent-loop``): the number of all_gathers follows the number of updates. A ``tqdm``/``trange``
whose ``disable=`` differs between ranks iterates the same items on every rank (not a rank-dependent loop),
but its counters (``bar.n``) do differ.

Loop lengths: a loop over a rank-dependent iterable is quiet when its length is the same on every rank
(``range`` bounds as a polynomial, ``seq[rank::world]`` of a list whose length is a multiple of ``world``,
``range(0, len(xs), bs)`` over such a list, names assigned once substituted) or when it never ends by itself
(``itertools.cycle``/``count``), so only its exits decide. ``seq[rank::world]`` and ``range(rank, n, world)``
of a constant length ``n`` are decided against the world size the file states (``WORLD_SIZE = 2``,
``nprocs=2``, ``--nproc-per-node 2``), else against 2, 4 and 8 ranks; of a length lint cannot see (data a
function returns), they are quiet: lint does not guess, and the run shows an uneven split.

Raising helpers: a function of the file that can raise or exit (outside a ``try`` with handlers) is an
early exit where it is called: under ``if rank == 0:`` before a barrier, the others wait.

Call graph: unlimited depth. Which functions reach a collective is found breadth first
over the module's call graph (cycles included; each function is visited once, so time grows about linearly
with the file: ``benchmarks/lint_scale.py``), through plain calls
``helper()``, ``self.method()``/``cls.method()`` in the same class or inherited from a base class
of the file, and class construction ``Trainer()`` (its or a base's ``__init__``); the shortest chain is
reported, e.g.
``evaluate -> reduce_mean -> dist.all_reduce`` (a chain of more than 12 calls by its ends). A notebook is one module (all code
cells). :func:`lint_function` also follows helpers found in the function's
``__globals__`` that were defined in the same module (e.g. other notebook cells).

Values a function passes to a broadcast, all-reduce or all-gather as their first argument hold the same
data on every rank afterwards, so returning them does not make the function's result rank-dependent
(``box = [mkdtemp() if rank == 0 else None]; broadcast_object_list(box); return box[0]``), and a use of
them on a later line is not rank-dependent either: "broadcast the stop decision, then ``break``" is
quiet. The same holds for the result of a framework call marked ``same_result`` (``check_trigger()``,
``strategy.broadcast(...)``). A tuple unpacked from a function of the file is tainted element by element
(``rank, world_size = get_dist_info()`` leaves ``world_size`` rank-independent; so does
``get_dist_info()[1]``). A ``range(a, b[, s])`` loop whose bounds depend on the rank but whose trip count
``b - a`` does not (evaluated as a polynomial: ``range(rank * n, rank * n + n)``) is not a rank-dependent
loop.

Known limits: conditions are compared by text (``is_main`` and ``rank == 0`` are
unrelated booleans, so mixing them can be reported as unbalanced); only ``range`` trip
counts are evaluated (and ``__len__`` of a class of the file), and a loop that stops on per-rank
data lint cannot see (``if batch is None: break``) is not flagged; a counter changed under a
rank-dependent ``if``/``while`` is rank-dependent (implicit flow), one changed in a loop of
rank-dependent length is not (most such loops have equal trips); framework receivers are recognised
by name, so an Accelerator held in a variable named ``acc`` is missed and an unrelated ``engine.step()`` is reported; whether
a DDP model has buffers is guessed from the file's text; laundering is by line, not by
control flow; ``raise`` is assumed to leave the function;
``match`` cases are opaque conditions; a barrier inside a
``with main_process_first():`` body is not reported (the main process's meets the others'
opening barrier, and theirs its closing one: the counts agree), any other collective there
is a ``branch`` (the main process makes it while the others wait in the opening barrier,
so the ranks make the same calls in different orders); collectives in lambdas, reached through
higher-order calls (``map(f, xs)``; a function of the file handed over as an argument is
followed) or defined in installed modules are not seen (the learner's own modules next to a
linted file are: see :data:`HELP`); taint follows a container only when it is changed in place
under a rank-dependent ``if``/``while``, and attributes other than ``self.x`` (or ``x.a`` of an
object of a class of the file) not at all, and
identifier matching can misfire on names such as ``matrix_rank``.
"""

from __future__ import annotations

import argparse
import ast
import bisect
import collections
import copy
import difflib
import inspect
import itertools
import json
import math
import os
import re
import stat
import sys
import textwrap
import threading
import tokenize
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, NamedTuple

from barrierlab import ops
from barrierlab.words import LATER_GROUP_FAILS

__all__ = [
    "COLLECTIVES",
    "CHECKPOINT_COLLECTIVES",
    "FRAMEWORK_COLLECTIVES",
    "FrameworkCollective",
    "HELP",
    "POINT_TO_POINT",
    "Finding",
    "LintError",
    "MAX_CODE_CHARS",
    "MAX_FILE_BYTES",
    "lint",
    "lint_file",
    "lint_function",
    "lint_source",
    "report",
    "run_command",
]

#: Collectives after which their first argument holds the same data on every rank.
_EQUALIZING = ops.EQUALIZING

#: Calls every rank of a group must make, from the ops table (recorded by barrierlab or not).
COLLECTIVES = ops.EVERY_RANK
CHECKPOINT_COLLECTIVES = ops.CHECKPOINT_OPS
POINT_TO_POINT = ops.POINT_TO_POINT_OPS
WRAPPERS = frozenset({"main_process_first", "wait_for_everyone"})
#: torch's barrier through a store (an ``add`` per rank, a ``set`` by the last, a ``wait`` on every rank; once per
#: ``key_prefix``): a collective of every rank for lint (round 14).
_STORE_BARRIER = "torch.distributed.elastic.utils.store.barrier"

_EXIT_CALLS = frozenset({"sys.exit", "exit", "quit", "os._exit"})
#: Calls that make a process group, which torch wants every rank of the world to make, members or not.
_GROUP_MAKING = frozenset({"new_group", "new_subgroups", "new_subgroups_by_enumeration"})
#: Calls that end this rank's default process group: after them its collectives raise, so a rank that made one
#: has left the group's sequence of collectives as if it had returned (accelerate's ``end_training`` destroys the
#: group since accelerate PR #3012).
_TEARDOWN_CALLS = frozenset({"destroy_process_group", "end_training"})


@dataclass(frozen=True)
class FrameworkCollective:
    """A framework call that issues torch.distributed collectives inside, so every rank must make it.

    A call matches when its name is ``name`` and either the receiver's last identifier (``accelerator`` in
    ``self.accelerator.save_state()``) is one of ``receivers``, or the receiver or the function resolves
    through the file's imports to one of ``modules`` (``comm.synchronize()`` after ``from detectron2.utils
    import comm``; ``barrier()`` after ``from mmengine.dist import barrier``), or the receiver is ``self`` in
    a class of the file that derives (within the file or directly) from one of ``self_bases``, or the
    receiver is a name or ``self.`` attribute assigned from a call of a class whose dotted name (through the
    imports) starts with one of ``constructors`` (``acc = torchmetrics.Accuracy(...)``; ``acc.compute()``).
    ``keyword``: the call is a collective only when it passes this keyword with a value other than
    ``False``/``None`` (Lightning's ``self.log(..., sync_dist=True)``).
    ``unless``: a keyword that, passed true, makes the call no collective (Lightning's ``self.log(...,
    sync_dist=True, rank_zero_only=True)`` reduces nothing). ``option``: for an object built by one of
    ``constructors``, the constructor keyword that switches the collective on or off, and its default
    (torchmetrics' ``compute`` syncs unless ``sync_on_compute=False``; its forward, ``metric(preds, target)``,
    only with ``dist_sync_on_step=True``). An entry named ``forward`` also matches a call of the object itself.
    ``same_result``: every rank gets the same value back (a broadcast or all-reduce), so a condition on it
    is not rank-dependent. ``issues`` says what the call does inside, for the finding; ``advice``, when
    given, is added to the finding's fix.
    """

    framework: str
    name: str
    issues: str
    receivers: frozenset[str] = frozenset()
    modules: frozenset[str] = frozenset()
    self_bases: frozenset[str] = frozenset()
    same_result: bool = False
    constructors: frozenset[str] = frozenset()
    keyword: str | None = None
    unless: str | None = None
    option: tuple[str, bool] | None = None
    advice: str = ""


def _entries(
    framework: str, names: dict[str, tuple[str, bool]], keyword: str | None = None, **where: Any
) -> list[FrameworkCollective]:
    options = {k: v for k, v in where.items() if k in ("unless", "option", "advice")}
    sets = {k: frozenset(v) for k, v in where.items() if k not in options}
    return [
        FrameworkCollective(framework, n, issues, same_result=same, keyword=keyword, **sets, **options)
        for n, (issues, same) in names.items()
    ]


_ACCELERATOR = {"accelerator"}
_ZERO = "torch ZeroRedundancyOptimizer"
_ACCELERATE_UTILS = {"accelerate.utils", "accelerate.utils.operations"}
_MMENGINE_DIST = {"mmengine.dist", "mmengine.dist.dist", "mmengine.dist.utils"}

#: Framework calls that are collectives. Extend it (``FRAMEWORK_COLLECTIVES += (...)``, or rebind it in this
#: module) to teach lint another library; ``main_process_first``/``wait_for_everyone`` on any receiver are
#: covered by WRAPPERS. Sources: accelerate src/accelerate/accelerator.py and utils/operations.py;
#: lightning src/lightning/pytorch/strategies/ddp.py, core/module.py (log/log_dict with sync_dist),
#: trainer/trainer.py and src/lightning/fabric/fabric.py; torchmetrics src/torchmetrics/metric.py (compute
#: runs under sync_context, sync); torch torch/distributed/optim/zero_redundancy_optimizer.py
#: (consolidate_state_dict "needs to be called on all ranks"); deepspeed deepspeed/runtime/engine.py; detectron2
#: detectron2/utils/comm.py; mmengine mmengine/dist/dist.py and utils.py; transformers
#: src/transformers/trainer.py.
FRAMEWORK_COLLECTIVES: tuple[FrameworkCollective, ...] = tuple(
    _entries(
        "Accelerate",
        {
            "save_state": (
                "a barrier (wait_for_everyone) with automatic checkpoint naming, collective saves under FSDP/DeepSpeed",
                False,
            ),
            "load_state": ("collective loads under FSDP/DeepSpeed", False),
            "save_model": ("a collective state-dict gather under FSDP/DeepSpeed", False),
            "get_state_dict": ("a collective state-dict gather under FSDP/DeepSpeed", False),
            "gather": ("an all_gather", True),
            "gather_for_metrics": ("an all_gather", True),
            "reduce": ("an all_reduce", True),
            "pad_across_processes": ("an all_gather of the sizes", False),
            "check_trigger": ("an all_reduce of the trigger flag", True),
            "prepare": ("DDP construction, which broadcasts the parameters", False),
            "backward": ("DDP's gradient all_reduce", False),
        },
        receivers=_ACCELERATOR,
    )
    + _entries(
        "Accelerate",
        {
            "gather": ("an all_gather", True),
            "gather_object": ("an all_gather_object", True),
            "broadcast": ("a broadcast", True),
            "broadcast_object_list": ("a broadcast", True),
            "reduce": ("an all_reduce", True),
            "pad_across_processes": ("an all_gather of the sizes", False),
        },
        modules=_ACCELERATE_UTILS,
    )
    + _entries(
        "Lightning",
        {
            "barrier": ("a barrier", False),
            "broadcast": ("a broadcast", True),
            "reduce": ("an all_reduce", True),
            "all_gather": ("an all_gather", True),
            "reduce_boolean_decision": ("an all_reduce", True),
        },
        receivers={"strategy"},
    )
    + _entries(
        "Lightning",
        {
            "barrier": ("a barrier", False),
            "broadcast": ("a broadcast", True),
            "all_gather": ("an all_gather", True),
            "all_reduce": ("an all_reduce", True),
            "save": ("a barrier and collective saves", False),
            "load": ("collective loads", False),
            "setup": ("DDP construction, which broadcasts the parameters", False),
            "setup_module": ("DDP construction, which broadcasts the parameters", False),
            "backward": ("DDP's gradient all_reduce", False),
        },
        receivers={"fabric"},
    )
    + _entries(
        "Lightning",
        {"all_gather": ("the strategy's all_gather", True)},
        self_bases={"LightningModule"},
        receivers={"pl_module", "lightning_module"},
    )
    + _entries(
        "Lightning",
        {
            "save_checkpoint": ("strategy.barrier('Trainer.save_checkpoint')", False),
            "fit": ("a DDP training loop", False),
            "validate": ("a distributed validation loop", False),
            "test": ("a distributed test loop", False),
        },
        receivers={"trainer"},
    )
    + _entries(
        "HF Trainer",
        {
            "train": ("a DDP training loop", False),
            "evaluate": ("an all_gather of predictions", False),
            "predict": ("an all_gather of predictions", False),
            "save_model": ("collective saves under DeepSpeed/FSDP", False),
        },
        receivers={"trainer"},
    )
    + _entries(
        "DeepSpeed",
        {
            "backward": ("the gradient all_reduce", False),
            "step": (
                "the optimizer step's collectives (ZeRO-1/2's parameter all_gather; fp16's overflow all_reduce)",
                False,
            ),
            "save_checkpoint": ("barriers and all_reduces (all ranks must call it)", False),
            "load_checkpoint": ("collective loads (all ranks must call it)", False),
        },
        receivers={"model_engine", "engine", "ds_engine", "deepspeed_engine"},
    )
    + _entries("DeepSpeed", {"initialize": ("a parameter broadcast", False)}, modules={"deepspeed"})
    + _entries(
        "detectron2",
        {
            "synchronize": ("a barrier", False),
            "all_gather": ("an all_gather_object", True),
            "gather": ("a gather_object", False),
            "reduce_dict": ("a reduce", False),
            "shared_random_seed": ("an all_gather_object (through comm.all_gather)", True),
        },
        modules={"detectron2.utils.comm"},
    )
    + _entries(
        "mmengine",
        {
            "barrier": ("a barrier", False),
            "all_reduce": ("an all_reduce", True),
            "all_gather": ("an all_gather", True),
            "all_gather_object": ("an all_gather_object", True),
            "gather": ("a gather", False),
            "gather_object": ("a gather_object", False),
            "broadcast": ("a broadcast", True),
            "broadcast_object_list": ("a broadcast", True),
            "sync_random_seed": ("a broadcast", True),
            "collect_results": ("a broadcast and a barrier (or an all_gather)", False),
            "collect_results_cpu": ("a broadcast and a barrier", False),
            "collect_results_gpu": ("an all_gather", False),
            "all_reduce_dict": ("all_reduces", True),
            "all_reduce_params": ("all_reduces", False),
        },
        modules=_MMENGINE_DIST,
    )
    + _entries(
        "torch.distributed.nn",
        {
            "all_gather": ("an all_gather (one that autograd differentiates)", True),
            "all_reduce": ("an all_reduce (one that autograd differentiates)", True),
            "broadcast": ("a broadcast (one that autograd differentiates)", True),
            "reduce": ("a reduce (one that autograd differentiates)", False),
            "gather": ("a gather (one that autograd differentiates)", False),
            "scatter": ("a scatter (one that autograd differentiates)", False),
            "all_to_all": ("an all_to_all (one that autograd differentiates)", False),
            "all_to_all_single": ("an all_to_all_single (one that autograd differentiates)", False),
        },
        modules={"torch.distributed.nn", "torch.distributed.nn.functional"},
    )
    + _entries(
        "torch DeviceMesh",
        {
            name: (
                "a new_group for every sub-group of each mesh dimension, which every rank of the world makes in the "
                "same order, members or not; only a one-dimensional mesh of the whole world may reuse the default "
                "group instead (torch/distributed/device_mesh.py, _init_one_process_group)",
                False,
            )
            for name in ("DeviceMesh", "init_device_mesh")
        },
        modules={"torch.distributed.device_mesh", "torch.distributed"},
    )
    + _entries(
        "Lightning",
        {
            "log": ("an all_reduce of the value (sync_dist=True), now or at the epoch's end", False),
            "log_dict": ("an all_reduce of the values (sync_dist=True), now or at the epoch's end", False),
        },
        self_bases={"LightningModule"},
        receivers={"pl_module", "lightning_module"},
        keyword="sync_dist",
        unless="rank_zero_only",
    )
    + _entries(
        "torchmetrics",
        {"compute": ("an all_gather of the metric's states (sync_context)", True)},
        constructors={"torchmetrics"},
        option=("sync_on_compute", True),
    )
    + _entries(
        "torchmetrics",
        {"sync": ("an all_gather of the metric's states", False)},
        constructors={"torchmetrics"},
    )
    + _entries(
        "torchmetrics",
        {"forward": ("an all_gather of the batch's states on every call (dist_sync_on_step=True)", False)},
        constructors={"torchmetrics"},
        option=("dist_sync_on_step", False),
        advice="or leave dist_sync_on_step off (the default): the metric then syncs once, in compute()",
    )
    + _entries(
        _ZERO,
        {
            "consolidate_state_dict": ("a broadcast of every rank's optimizer state shard", False),
            "step": ("a broadcast of every rank's updated parameter shard to the others (_sync_params)", False),
        },
        constructors={
            "torch.distributed.optim.ZeroRedundancyOptimizer",
            "torch.distributed.optim.zero_redundancy_optimizer.ZeroRedundancyOptimizer",
        },
    )
    + _entries(
        "DTensor",
        {
            "full_tensor": (
                "an all_gather of a Shard placement, an all_reduce of a Partial one (redistribute to Replicate)",
                True,
            ),
            "redistribute": (
                "collectives that move the shards (an all_gather, all_reduce, reduce_scatter or all_to_all for most "
                "placement changes; Replicate to Shard is local)",
                False,
            ),
        },
    )
)


@dataclass(frozen=True)
class RankHook:
    """A method that a framework calls on some ranks only: a collective reached from it has no partner on the
    other ranks, although no ``if`` of the file says so. It applies to a method ``name`` of a class of the file
    that derives (within the file or directly) from one of ``bases``; ``runs_on`` says on which ranks, ``fix``
    what to do instead, ``source`` where the framework decides it."""

    framework: str
    name: str
    bases: frozenset[str]
    runs_on: str
    fix: str
    source: str


#: Hooks a framework runs on some ranks only. Extend it like FRAMEWORK_COLLECTIVES.
RANK_HOOKS: tuple[RankHook, ...] = tuple(
    RankHook(
        "Lightning",
        "prepare_data",
        frozenset({base}),
        "local rank 0 of each node (global rank 0 with prepare_data_per_node=False), while the other ranks wait "
        "in Lightning's own barrier on another process group",
        "move `{call}` out of prepare_data: Lightning already holds the other ranks until prepare_data "
        "returns; make calls every rank needs in setup(), which runs on every rank",
        "Lightning 2.6.5 src/lightning/pytorch/trainer/connectors/data_connector.py _DataConnector.prepare_data (under "
        "_InfiniteBarrier, 'if (prepare_data_per_node and local_rank_zero) or ...')",
    )
    for base in ("LightningDataModule", "LightningModule")
)

#: torchmetrics metrics (by class name) with list states reduced with ``dist_reduce_fx=None``: ``_sync_dist``
#: concatenates only ``"cat"`` lists before gathering, so these gather their lists one element at a time, one
#: element per ``update()`` call (torchmetrics v1.9.0 src/torchmetrics/metric.py ``Metric._sync_dist``; the states in
#: each class's ``add_state`` calls). A metric class of the file that calls ``add_state`` so is found by itself.
PER_ELEMENT_METRICS: dict[str, str] = {
    **dict.fromkeys(
        (
            "RetrievalMAP",
            "RetrievalMRR",
            "RetrievalPrecision",
            "RetrievalRecall",
            "RetrievalFallOut",
            "RetrievalHitRate",
            "RetrievalNormalizedDCG",
            "RetrievalRPrecision",
            "RetrievalAUROC",
        ),
        "indexes, preds, target (retrieval/base.py)",
    ),
    **dict.fromkeys(
        ("RetrievalPrecisionRecallCurve", "RetrievalRecallAtFixedPrecision"),
        "indexes, preds, target (retrieval/precision_recall_curve.py)",
    ),
    "KernelInceptionDistance": "real_features, fake_features (image/kid.py)",
    "InceptionScore": "features (image/inception.py)",
    "LearnedPerceptualImagePatchSimilarity": "all_scores (image/lpip.py)",
    "VisualInformationFidelity": "vif_score (image/vif.py)",
    "ROUGEScore": "one list per ROUGE key and score (text/rouge.py)",
}
_METRIC_FEEDS = frozenset({"update", "forward"})  # calls that append to a metric's list states
_METRIC_SYNCS = frozenset({"compute", "sync"})
#: Progress bars: their keywords only change what is printed, not what they iterate; a bar disabled on some
#: ranks does not count there, so its counters differ (tqdm's ``update`` returns early when disabled).
_PROGRESS_BARS = frozenset({"tqdm", "trange"})
_DISPLAY_KEYWORDS = frozenset({"disable", "position", "desc", "leave", "postfix", "dynamic_ncols"})
_BAR_COUNTERS = ("n", "last_print_n", "format_dict")
#: Decorators of Accelerate (``Accelerator``/``PartialState``) that run the function on one process only.
_PROCESS_DECORATORS = frozenset({"on_process", "on_local_process", "on_last_process"})
_STATE_RECEIVERS = frozenset({"accelerator", "state", "partial_state", "partialstate", "accelerator_state"})
#: Layers and calls that give a module buffers: DDP's forward broadcasts buffers even under no_grad.
_BUFFERS = re.compile(r"BatchNorm|register_buffer|running_mean|track_running_stats=True")
_NO_GRAD = frozenset({"no_grad", "inference_mode"})
_JOIN = frozenset({"Join", "join", "join_uneven_inputs"})
_DATA_ONLY_CALLS = frozenset(
    {
        "to",
        "cuda",
        "device",
        "set_device",
        "DistributedSampler",
        "ElasticDistributedSampler",
        "DistributedDataParallel",
        "DDP",
        "FullyShardedDataParallel",
        "FSDP",
    }
)
#: Keyword arguments that never make a call's result differ in value or length between ranks: where tensors go,
#: who sends, and whether a data set fetches its files first (``MNIST(download=fabric.is_global_zero)`` inside
#: Fabric's ``rank_zero_first``: torchvision's data sets hold the same items either way; attack23 a06).
_DATA_ONLY_KEYWORDS = frozenset(
    {"device", "device_ids", "output_device", "map_location", "src", "dst", "group", "download"}
)
_RANK_TOKEN = re.compile(r"rank\d*|ordinal")
_RANK_PAIRS = frozenset(
    {
        ("is", "main"),
        ("is", "master"),
        ("main", "process"),
        ("master", "process"),
        ("process", "index"),
        ("global", "zero"),
        ("process", "zero"),
        ("last", "process"),
    }
)
#: Whole identifiers that are true on some ranks only (HF TrainingArguments: process 0 saves and logs).
_RANK_IDENTIFIERS = frozenset({"should_save", "should_log"})
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_LINE_BREAK = re.compile(r"(\r\n|\r|\n)")  # the line ends the parser counts (not \f or \v)
#: Decorators of installed libraries that run the decorated function on rank 0 only, although their names
#: say nothing of ranks (mmcv/runner/dist_utils.py and mmengine/dist/utils.py ``master_only``).
_RANK_DECORATORS = frozenset(
    {
        "mmcv.runner.master_only",
        "mmcv.runner.dist_utils.master_only",
        "mmengine.dist.master_only",
        "mmengine.dist.utils.master_only",
    }
)
#: Calls that ask the file system whether a path exists or what it is (os.path, pathlib, fsspec/iopath).
_FILE_CHECKS = frozenset({"exists", "lexists", "isfile", "isdir", "is_file", "is_dir", "access"})
#: Cross-process file locks (``filelock``, ``fasteners``): one process of the machine holds one at a time.
_FILE_LOCKS = frozenset({"FileLock", "SoftFileLock", "UnixFileLock", "WindowsFileLock", "InterProcessLock"})
_FILE_CHECK_TEXT = re.compile(r"\b(?:" + "|".join(sorted(_FILE_CHECKS)) + r")\(")
_MAGIC = re.compile(r"^\s*(?:[%!]|[\w.]+\s*=\s*[%!])")
_MAX_WORLDS = 4096
#: Calls of a chain shown in a finding (``a -> b -> dist.barrier``); a longer one is shown by its ends.
_MAX_CHAIN = 12
#: How deep the length analysis substitutes values and looks through calls (it stops at cycles this way).
_MAX_DEPTH = 24
#: Methods that change a list in place: a name they are called on is not a single known value.
_MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse", "update", "add"})
#: Iterables with no end: a loop over them stops only where it breaks, so its trip count is what its exits say.
_ENDLESS = frozenset({"cycle", "count"})
#: Calls that seed a process's global random state, and draws from it.
_GLOBAL_SEEDS = frozenset(
    {
        "torch.manual_seed",
        "torch.random.manual_seed",
        "random.seed",
        "numpy.random.seed",
        "np.random.seed",
        "lightning.seed_everything",
        "lightning.pytorch.seed_everything",
        "pytorch_lightning.seed_everything",
        "transformers.set_seed",
        "accelerate.utils.set_seed",
    }
)
#: Collectives that write into a list of output tensors: (position, keyword) of that list.
#: Collectives that write what they receive into an argument: (position, keyword) of that argument.
_RECEIVED_INTO = {
    "broadcast": (0, "tensor"),
    "broadcast_object_list": (0, "object_list"),
    "all_gather": (0, "tensor_list"),
    "all_gather_object": (0, "object_list"),
    "scatter_object_list": (0, "scatter_object_output_list"),
}
#: Calls that copy their data into a new tensor (``torch.as_tensor``/``from_numpy`` may share it).
_COPYING_TENSORS = frozenset({"torch.tensor", "th.tensor"})
_OUTPUT_LISTS = {
    "all_gather": (0, "tensor_list"),
    "gather": (1, "gather_list"),
    "all_to_all": (0, "output_tensor_list"),
}
#: Readings of the process's own clock (see ``_Analysis._clock_reading``).
_CLOCKS = frozenset(
    {
        *(
            f"time.{name}"
            for name in ("time", "monotonic", "perf_counter", "time_ns", "monotonic_ns", "perf_counter_ns")
        ),
        "datetime.datetime.now",
        "datetime.datetime.utcnow",
        "datetime.now",
        "datetime.utcnow",
        "timeit.default_timer",
    }
)
_TORCH_DRAWS = frozenset({"randperm", "randint", "rand", "randn", "multinomial", "normal", "bernoulli", "poisson"})
_PY_DRAWS = frozenset(
    {"shuffle", "random", "randint", "choice", "choices", "sample", "permutation", "rand", "randn", "uniform"}
)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_LOOP_FIX = (
    "make every rank run the same number of iterations (DistributedSampler pads every rank's share to the same "
    "count by default, or truncates it with drop_last=True); or loop over an endless iterator and break on every "
    "rank together "
    "when an all_reduce of a 'done' flag says so; for a DDP model, torch.distributed.algorithms.Join"
)


@dataclass(frozen=True)
class Finding:
    """One collective that only some ranks reach.

    ``line`` is 1-based (within the cell for notebooks), ``col`` is 1-based like
    flake8, ``cell`` is the 1-based position of the cell in the notebook.
    """

    path: str
    line: int
    col: int
    collective: str
    condition: str
    kind: str
    why: str
    fix: str
    cell: int | None = None
    #: The library of a framework call (``FrameworkCollective.framework``: "Lightning", "torchmetrics"), or of
    #: the framework call a helper reaches; None for torch.distributed's own calls and DDP/FSDP models.
    framework: str | None = None
    #: The line of the condition (the ``if``, loop or exit test that only some ranks take), when it is on
    #: another line than the collective and found above it in the same file or cell; else None.
    condition_line: int | None = None

    @property
    def location(self) -> str:
        """``file.py:12`` or ``notebook.ipynb:cell 3, line 4``."""
        if self.cell is None:
            return f"{self.path}:{self.line}"
        return f"{self.path}:cell {self.cell}, line {self.line}"

    def __str__(self) -> str:
        return f"{self.location}: {self.collective} [{self.kind}] {self.why}. Fix: {self.fix}"


def lint_source(source: str, path: str = "<string>") -> list[Finding]:
    """Lint Python source text; ``path`` only labels the findings."""
    if not isinstance(source, str):  # attack28 a15: None or bytes failed deep inside with no parameter named
        hint = " (decode it first, or give the file to lint_file)" if isinstance(source, (bytes, bytearray)) else ""
        raise TypeError(f"lint_source: source must be Python source text (str), not {type(source).__name__}{hint}")
    if not isinstance(path, str):
        raise TypeError(f"lint_source: path must be a str (it labels the findings), not {type(path).__name__}")
    _check_code_size(len(source), path)

    def analyse() -> list[Finding]:  # parsed on the deep stack too (a 3,200-case dispatch: lintquad29)
        tree = ast.parse(source, filename=path)
        return _Analysis(path, [_Unit(tree, source, aliases=_imports([tree]))]).run()

    return _with_deep_stack(analyse, path)


class LintError(ValueError):
    """A file lint cannot read or parse: not a regular file, too large, not UTF-8 (or its declared encoding),
    not valid Python, not a notebook. The message is one line and names the file."""


#: The most bytes lint reads from one file (a notebook stored with large outputs included).
MAX_FILE_BYTES = 64 * 1024 * 1024
#: The most Python source lint analyses at once, in characters: a ``.py`` file, or a notebook's code cells
#: together (outputs do not count), with the modules it follows. Lint's time grows about linearly with the code,
#: by up to 6 s of CPU per MB where every few lines hold a finding (a 13.5 MB notebook of rank-0-only barriers
#: took 63 s, and minutes on a loaded machine); real modules are far smaller (torch's distributed_c10d.py,
#: 271 kB: 0.7 s). A larger file is refused by name; a module that would take the code past it is not followed.
MAX_CODE_CHARS = 1024 * 1024


def _barrier_of(statement: ast.stmt) -> tuple[str | None] | None:
    """For a statement that is a ``dist.barrier(...)`` call, a 1-tuple of its ``group=`` (dumped; None for the
    default group); else None. ProcessGroupGloo's barrier completes all earlier work of its group first."""
    call = statement.value if isinstance(statement, ast.Expr) else None
    if not isinstance(call, ast.Call) or _terminal(call.func) != "barrier":
        return None
    return (next((ast.dump(k.value) for k in call.keywords if k.arg == "group"), None),)


def _visibly_empty(node: ast.AST) -> bool:
    """``torch.empty(0)``, ``torch.zeros(0)``, ``torch.ones(0)`` or ``torch.tensor([])``: a tensor with no
    elements, from its literal."""
    if not isinstance(node, ast.Call) or len(node.args) != 1:
        return False
    factory, arg = _terminal(node.func), node.args[0]
    if factory in ("empty", "zeros", "ones"):
        return isinstance(arg, ast.Constant) and arg.value == 0 and not isinstance(arg.value, bool)
    return factory == "tensor" and isinstance(arg, (ast.List, ast.Tuple)) and not arg.elts


def _ends_on_gloo(who: str, fail: str = "fail") -> str:
    """How gloo ends that wait when ``who`` ends its process: at once only for ranks waiting on it at that moment
    (review55b M1: at 8 ranks, with the failing ranks alive, ranks 2 and 4 waited the full timeout)."""
    return (
        f"{fail} on gloo when {who} ends its process (at once for the ranks waiting on it then; the others as "
        "those fail and end, else at the timeout)"
    )


def _check_code_size(size: int, path: object) -> None:
    if size > MAX_CODE_CHARS:
        raise LintError(
            f"cannot lint {path}: {size:,} characters of code, more than lint analyses at once "
            f"({MAX_CODE_CHARS:,}, lint.MAX_CODE_CHARS); lint the part you suspect in a file of its own"
        )


def lint_file(path: str | os.PathLike[str]) -> list[Finding]:
    """Lint a ``.py`` file or every code cell of a ``.ipynb`` notebook. Raises :class:`LintError` for a file
    it cannot read or parse (before reading anything from a FIFO, device or folder)."""
    path = Path(path)

    def analyse() -> list[Finding]:
        if path.suffix == ".ipynb":
            return _lint_notebook(path)
        source = _read_source(path)
        _check_code_size(len(source), path)
        tree = _parse(source, path)
        unit = _Unit(tree, source, aliases=_imports([tree]))
        return _Analysis(str(path), [unit, *_follow_imports([unit], path.parent)]).run()

    return _with_deep_stack(analyse, path)


#: A second try for valid code nested deeper than Python's default recursion limit lets lint walk (a 600-case
#: ``elif`` chain, a 600-term sum: attack21 a05): a thread of its own, with this much stack and this limit.
DEEP_STACK_BYTES = 512 * 1024 * 1024
DEEP_RECURSION_LIMIT = 60_000


def _with_deep_stack(analyse: Callable[[], list[Finding]], path: object) -> list[Finding]:
    """``analyse()``; if it runs out of recursion depth, once more in a thread with a deep stack; if that is not
    enough either, :class:`LintError` "nested too deeply"."""
    try:
        return analyse()
    except RecursionError:
        pass
    outcome: list = []

    def deep() -> None:
        try:
            outcome.append(analyse())
        except BaseException as error:  # noqa: BLE001 - handed back to the caller's thread
            outcome.append(error)

    old_limit, old_size = sys.getrecursionlimit(), threading.stack_size()
    try:
        threading.stack_size(DEEP_STACK_BYTES)
        sys.setrecursionlimit(max(old_limit, DEEP_RECURSION_LIMIT))
        worker = threading.Thread(target=deep, name="barrierlab-lint-deep")
        worker.start()
        worker.join()
    finally:
        threading.stack_size(old_size)
        sys.setrecursionlimit(old_limit)
    if outcome and isinstance(outcome[0], RecursionError):
        raise LintError(f"cannot lint {path}: nested too deeply for lint") from None
    if outcome and isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]


def _file_kind(mode: int) -> str:
    kinds = (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    )
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def _read_bytes(path: Path) -> bytes:
    """The bytes of a regular file (after symlinks), at most MAX_FILE_BYTES: opened without blocking so that
    a FIFO is refused by name instead of waiting for a writer, and a device is never read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise LintError(f"cannot lint {path}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise LintError(f"cannot lint {path}: it is {_file_kind(info.st_mode)}, not a regular file")
        too_big = f"cannot lint {path}: larger than {MAX_FILE_BYTES} bytes (lint.MAX_FILE_BYTES)"
        if info.st_size > MAX_FILE_BYTES:
            raise LintError(too_big)
        chunks, size = [], 0
        while size <= MAX_FILE_BYTES:
            chunk = os.read(fd, min(1 << 20, MAX_FILE_BYTES + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > MAX_FILE_BYTES:  # it grew while being read
            raise LintError(too_big)
        return b"".join(chunks)
    except OSError as exc:
        raise LintError(f"cannot lint {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def _read_source(path: Path) -> str:
    """A Python file's text, in the encoding it declares (PEP 263; UTF-8 by default)."""
    data = _read_bytes(path)
    try:
        encoding, _ = tokenize.detect_encoding(iter(data.splitlines(keepends=True)).__next__)
    except SyntaxError as exc:  # a bad encoding declaration, or bytes that are not UTF-8 without one
        _decode(data, "utf-8", path)
        raise LintError(f"cannot lint {path}: {exc.msg}") from None
    return _decode(data, encoding, path)


def _decode(data: bytes, encoding: str, path: Path) -> str:
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        name = "UTF-8" if encoding.startswith("utf-8") else encoding
        raise LintError(
            f"cannot lint {path}: not {name} text (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        ) from None
    except LookupError:
        raise LintError(f"cannot lint {path}: unknown encoding {encoding!r}") from None


#: Operands of one ``and``/``or`` or one comparison chain lint reads: real code has a handful; a line of 170,000
#: (``a and a and ...``, within the size bound) cost lint minutes of CPU and a gigabyte (attack12 r4).
MAX_OPERANDS = 1000


def _parse(source: str, path: Path) -> ast.Module:
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        where = f" (line {exc.lineno})" if exc.lineno else ""
        raise LintError(f"cannot lint {path}: not valid Python: {exc.msg}{where}") from None
    except (ValueError, MemoryError) as exc:  # null bytes; too many nested parentheses
        raise LintError(f"cannot lint {path}: not valid Python: {exc}") from None
    for node in ast.walk(tree):
        operands = (
            len(node.values)
            if isinstance(node, ast.BoolOp)
            else len(node.comparators) + 1
            if isinstance(node, ast.Compare)
            else 0
        )
        if operands > MAX_OPERANDS:
            raise LintError(
                f"cannot lint {path}: the expression at line {node.lineno} has {operands:,} operands (lint reads at "
                f"most {MAX_OPERANDS:,} in one `and`/`or` or comparison chain); split it"
            )
    return tree


def lint_function(fn: Callable[..., Any]) -> list[Finding]:
    """Lint one function (or method) from its source, as found by :mod:`inspect`.

    Works for functions defined in Jupyter cells (IPython registers cell sources
    in :mod:`linecache`); line numbers are those of the function's file or cell.
    ``path`` is the source file, ``<cell N>`` for an ``<ipython-input-N-...>`` cell,
    or the function's qualified name when its source lives only in a kernel.
    """
    return _lint_object(inspect.unwrap(fn))


def lint(obj: Any) -> list[Finding]:
    """Lint a path (``str``/``Path``, ``.py`` or ``.ipynb``), function, method, class or module."""
    if isinstance(obj, (str, os.PathLike)):
        return lint_file(obj)
    if inspect.ismodule(obj):
        return lint_source(inspect.getsource(obj), getattr(obj, "__file__", None) or obj.__name__)
    if inspect.isfunction(obj) or inspect.ismethod(obj) or inspect.isclass(obj) or hasattr(obj, "__wrapped__"):
        return _lint_object(inspect.unwrap(obj))
    raise TypeError(f"cannot lint {type(obj).__name__!r}: pass a path, function, class or module")


#: The kinds of finding that are a collective some ranks reach and others do not (or reach a different number of
#: times): what the report's header counts as "rank-dependent collectives".
#: What :func:`report` says when lint finds nothing: what it checked and what it cannot (learners read a bare
#: "nothing found" as "this file is clean"). ``{where}`` is "" or " in the files lint could read".
NOTHING_FOUND_TEMPLATE = (
    "No problems found{where} by lint's static checks (collectives only some ranks reach or make in another order, "
    "group arguments, files, store keys and point-to-point calls between ranks: barrierlab lint --help).\n"
    "Lint runs nothing: timeouts, sizes from data and code it cannot read show only when it runs (barrierlab run)."
)
NOTHING_FOUND = NOTHING_FOUND_TEMPLATE.format(where="")

RANK_DEPENDENT_KINDS = frozenset({"branch", "early-exit", "rank-dependent-loop", "hidden-collective", "except-path"})


def report(findings: Sequence[Finding]) -> str:
    """Render findings as a readable multi-line report. The header says "rank-dependent collectives" only when
    every finding is one (review41b: a dropped async handle and an aliased output list, which every rank
    reaches, were counted as such)."""
    wrong = "report: findings must be a list of Finding, as lint(), lint_file() or lint_source() return"
    if findings is None or isinstance(findings, (str, bytes)):  # attack28 a15: report(None) said nothing found
        raise TypeError(wrong)
    try:
        findings = list(findings)
    except TypeError:
        raise TypeError(wrong) from None
    if not all(isinstance(f, Finding) for f in findings):  # report([1, 2]) raised AttributeError
        raise TypeError(wrong)
    if not findings:
        return NOTHING_FOUND
    count = len(findings)
    if all(f.kind in RANK_DEPENDENT_KINDS for f in findings):
        header = f"{count} rank-dependent collective{'s' if count != 1 else ''} found:"
    else:
        header = f"{count} problem{'s' if count != 1 else ''} found:"
    lines = [header, ""]
    for f in findings:
        lines += [
            f"{f.location}: {f.collective} [{f.kind}]",
            f"    condition: {f.condition}" + (f" (line {f.condition_line})" if f.condition_line is not None else ""),
            f"    why: {f.why}",
            f"    fix: {f.fix}",
            "",
        ]
    return "\n".join(lines).rstrip("\n")


#: The command line's help: what lint checks, what it follows, what it cannot know (plain text).
HELP = """\
Find torch.distributed collectives that only some ranks reach: under an if on the rank or on the file
system (os.path.exists, Path.is_file: ranks can see different files), on a clock reading (time.monotonic(),
time.time(): each rank reads its own) or a logger's level (logger.isEnabledFor), after a return, raise or break that
only some ranks take (also a raise inside a helper called there, and a local assigned only under an if on
the rank, then read on every rank: UnboundLocalError on the others), in a loop whose trip count differs between
ranks (and a plain collective in a loop under with Join([...]): Join shadows only its Joinables'), in a function whose decorator calls it on some ranks only (rank_zero_only, mmcv's master_only, or a
decorator of your own module that tests the rank), or inside a function of the file or of your own module
next to it (import helpers / from helpers import f, followed up to 3 imports deep and 20 files) that is
called so — reading a @property of a class of the file counts as calling its getter (a @cached_property's
first read in a function only). It knows torch.distributed, DCP, DDP/FSDP models, and the collectives of Accelerate, Lightning
(self.log with sync_dist=True too, unless rank_zero_only=True), torchmetrics (compute unless the metric was
built with sync_on_compute=False, sync, and metric(...) itself when built with dist_sync_on_step=True),
ZeroRedundancyOptimizer .consolidate_state_dict, DeepSpeed, detectron2, mmengine and the HF Trainer. Rank
tests include is_global_zero, is_main_process, is_local_main_process, is_last_process, local_rank and
global_rank on any object, and Accelerate's @accelerator.on_main_process / on_process / on_last_process.
Library hooks that run on some ranks only: Lightning's prepare_data (local rank 0 of each node: Lightning
2.6.5's _DataConnector.prepare_data), so a collective made in it, or in a function it calls, is reported.
Data-dependent numbers of syncs: a torchmetrics metric whose list states are gathered one element at a time
(dist_reduce_fx=None in a metric of your file; the retrieval metrics, KID, InceptionScore, LPIPS, VIF, ROUGE:
torchmetrics 1.9.0's Metric._sync_dist), updated in a loop whose length differs between ranks, is reported at
its compute().

What differs between ranks also flows: through assignments, loop variables (for name in stages[rank]), what
an if or while on the rank changes (a patience counter bumped under if val_loss < best), the self. state a
method changes when called under such an if or loop inside a function (not at a script's top level, and not an
attribute set directly, m.n = 3), objects of your classes handed to other classes, and
draws from a global random state seeded per rank (torch.manual_seed(seed + rank), then torch.randperm(n)
without generator=): a loop over an object whose __len__ then differs is reported; a zip whose range()
argument every rank shares (zip(range(steps), loader), steps agreed by an all_reduce) is taken to stop all
ranks after that many steps (their own loaders being at least as long). Calls are followed into
methods of objects of your classes (monitor.aggregate()) and into functions handed over as arguments
(callbacks kept in self.x). A helper that raises under a test on the rank, or on a parameter given a
rank-dependent value, before its collective leaves early on some ranks; a raise on some ranks inside
Accelerate's with accelerator.main_process_first() skips its closing barrier (accelerate 1.14.0's
PartialState._goes_first has no try/finally; barrierlab's tells the others that the main process failed;
transformers' TrainingArguments.main_process_first makes its closing barrier in a finally).

Sizes and counts from data: size-mismatch, a collective's tensor whose size comes from its values
(torch.bincount without minlength, unique, nonzero) or from the keys of a dict filled from data (a key added
under an if on the function's arguments, or per item of such a value), stacked into one all_reduce; and a
broadcast_object_list given a literal placeholder list on some ranks and a list of another length on
others; and a tensor whose size comes from the rank (torch.ones(4 if rank == 0 else 8), torch.zeros(n)
with n assigned from the rank) handed to a collective whose tensors must have one shape on every rank
(all_reduce, broadcast, all_gather...). data-dependent-count, one collective per key of such a dict (a loop over it, Lightning's
self.log_dict(..., sync_dist=True)). Keys agreed first (all_gather_object of the key sets) are quiet.

Exceptions and each rank's own results: except-path, a collective inside an except handler (not for
ImportError): only the ranks whose try raised (their data, memory or files) run it, while the others are past
it or inside another collective; also a collective in a try body after the rank's own work, when a handler
goes on instead of raising (except Exception: log; results.append(None)): a rank whose work raised skips it,
and the same inside with contextlib.suppress(OSError): (the block is left at the error); a raising helper
called in a try whose handler catches every error and goes on leaves no rank early; names an except handler sets (failed = True) differ between ranks, so a finally: if not failed: barrier() is
a branch. A loop left by a break/return/continue, or a while, whose test
reads this rank's own model output (the forward of a DDP/FSDP model, of a torch module of your file fed a
rank-dependent input, or a function of your file returning such output: if next_token == eos: break,
while loss > 1e-3), or a value computed from the batch of a for loop over a data loader (each rank's own
shard), is rank-dependent; so is a collective on the right of an and/or whose left operand reads it unless the value went through an all_reduce or broadcast first, or a
function of your file that agrees it; a module fed the same input on every rank (tensor parallel) is not. dtype-mismatch: torch.tensor(x)
without dtype= handed to an all_reduce/all_gather/broadcast, where x adds up per-rank values (self.total +=
value) or is a numpy scalar whose type a test on the rank picks (np.float32(a) if rank == 0 else
np.float64(b), in place or through a name): its type, so the dtype, may differ per rank (a numpy call alone,
np.mean(...), is not reported). size-mismatch also: an all_gather
(torch's, Accelerate's gather/gather_for_metrics, or a function of your file that reaches one) of a padded
token batch (batch["input_ids"], attention_mask...) or of sequences from model.generate(...) not padded
across processes first. group-rank: dst/src of gather, reduce, scatter or
broadcast (and their object variants) given a rank within its group= (dist.get_rank(group), a name compared
with it, or a literal the function tests as the group's leader): torch takes a global rank even with
group=; use dist.get_global_rank(group, r) or group_dst=/group_src=. different-reduce-ops: an all_reduce,
reduce or reduce_scatter whose op= depends on the rank (op=ReduceOp.MAX if rank == 0 else ReduceOp.SUM):
gloo does not check that the ops agree, every rank finishes with a result of one rank's op, neither, or a
mix; pass the same op on every rank. different-roots: a broadcast/reduce/gather/scatter without group= whose
src/dst is computed from the rank or chosen by a test on it (src=0 if rank < 2 else 1): the ranks name different
roots; pass the same root on every rank, or a group per root. set-order: a collective in a loop over
a set of names (set(...), a set literal, a - b of one) in the set's own order, which under torchrun differs
per worker (each has its own string hash seed); iterate sorted(...). unwaited-async: a collective called
with async_op=True whose handle is dropped (a statement of its own): no line waits before its tensors are
read (on gloo a later blocking barrier of its group does); also an isend/irecv whose handle is dropped, which on
gloo can lose the message; keep the handle and call work.wait(). read-before-wait: work = <collective>(t, async_op=True), then a use of
t before work.wait() in the same block: t may not be written yet; wait first. aliased-outputs: an all_gather/gather/all_to_all output list of
one tensor repeated ([torch.zeros_like(t)] * world_size): every slot is that one tensor. discarded-output: a
broadcast, broadcast_object_list, all_gather, all_gather_object or scatter_object_list whose output is a list or
tensor made in the call around a name the code reads after it (broadcast_object_list([stats], src=0), then
stats): what it receives is lost; one into a throwaway that holds no such name (broadcast(torch.zeros(2), src=0),
[None] * n) is taken for a wait and not reported. finalizer: a
collective made by a __del__ method (directly or through functions of the file): it runs when each rank
frees the object, not at one point every rank reaches. generator-decorated: a context manager that makes a
collective (a @contextmanager function of the file reaching one, or main_process_first) decorating a generator
function: it wraps only the call that creates the generator, so its collectives run and its block ends before
any of the body runs; put the with block around the code that consumes the generator. detached-loss: a function whose result goes into a
loss.backward() returns, under a branch on its data (if labels.numel() == 0:), a tensor made from constants
(torch.tensor(0.0, requires_grad=True), torch.zeros(())): on a rank that takes the branch the backward skips
what it makes on the others (DDP's gradient all_reduce); return a zero built from the model's outputs.
every-rank-mkdir: a function every rank runs (or a script's top level that calls init_process_group) makes one
folder, the same path on every rank, with
os.makedirs(path) or Path(path).mkdir() without exist_ok=True (a check that it is missing first is no guard):
all but the first rank raise FileExistsError; pass exist_ok=True.
group-arguments: new_group, new_subgroups or new_subgroups_by_enumeration given ranks built from the rank
(get_rank(), RANK, a rank parameter): every rank must pass the same ones (quiet with use_local_synchronization=True).
non-member: a collective on group=g, inside a function, that a rank outside g provably reaches (lint runs the
function in the world size the file states, else in worlds of 4, 8 and 12 ranks; not checked at a script's top
level): torch.distributed warns and returns at once on that
rank, so the call orders and shares nothing there; call it only where the rank is a member.
collective-order: the branches of an if/elif/else on the rank make the same collectives with the same arguments
in another order (all_reduce(a); all_reduce(b) against all_reduce(b); all_reduce(a)): torch pairs them by
position, so values of different tensors combine. store-key: a store.get/wait of a constant key no line of the
file sets (set, add, compare_set), a store wait cycle between branches (each waits for a key the other sets
after its own wait), and a store-based barrier (elastic.utils.store.barrier, _store_based_barrier) with a constant
key in code that runs more than once (a loop, two calls): only its first use waits. p2p-unmatched: a send/recv
(isend, irecv, object variants) to or from a peer the code names (src=0) when that peer's way through the same
function (or the same script's top level), its tests on the rank evaluated on the world size the file states (else
2 ranks), makes no matching call. forked-collective: a collective in a child process the rank
starts (the child branch of os.fork(), or multiprocessing.Process(target=f) where f reaches one and does not call
init_process_group).
agreed-argument: a library object built with an argument computed from this rank's own values (its rank, its
shards) that decides which collectives it makes later - PowerSGDState(start_powerSGD_iter=..., matrix_approximation_rank,
min_compression_rate), PostLocalSGDState(start_localSGD_iter=...), PeriodicModelAverager(period, warmup_steps) -
reported at the backward that runs the comm hook given that state (or at average_parameters()); quiet when a
helper of the file all-reduces or broadcasts the value first.
diverged-module: a module changed under an if on the rank before DDP(module) wraps it - parameters frozen or
unfrozen (requires_grad_, requires_grad =, also in a function of the file handed the module), or a buffer its
class registered as None given a tensor by a method - reported at the DDP constructor: it checks the parameters
that require grad across the ranks and broadcasts rank 0's parameters and buffers. Values loaded on some ranks are
quiet (DDP's broadcast repairs them). Also a module built from a size that differs between ranks
(DDP(Model(n)) where Model.__init__ passes n to nn.Linear/nn.Embedding/...), such as the result of a function
under @rank_zero_only (None on the other ranks).
unfrozen-after-wrap: parameters frozen before DDP(module) and set to require grad again after it
(p.requires_grad_(True) over module.parameters()): DDP's reducer never all-reduces them.
shared-checkpoint-key: dcp.save of a state with an entry under a string key the same on every rank whose value
is the state of an object built from the rank ({"dataloader": data.state_dict()}, data = Loader(rank)): DCP's
planner writes one rank's copy of entries every rank holds under one key, so the load gives every rank that copy;
save it under a key built from the rank.
A DDP communication hook of the file (register_comm_hook(state, hook)) whose collective depends on a test of its
bucket's gradient values (if not torch.any(bucket.buffer()): return ...) is a branch: each rank's bucket holds its
own, unreduced gradients (tests of the bucket's size, index or is_last() are quiet).

Two checks of order, within one function: p2p-order, every rank making a blocking send before its recv (on
gloo a send waits for the receiver) or a recv before its send, outside any if or while; and
file-race, a file written under a condition on the rank (torch.save, open for writing, os.replace) and read
by the other ranks (torch.load, open, or a look: os.path.exists, isfile, getsize, Path.exists) with no
barrier, collective, store wait or recv between them (one called with async_op=True counts only from its
work.wait() on; a broadcast or scatter orders only its root's writes, a reduce or gather only the others'), a
file removed under such a condition (os.remove, os.unlink, Path.unlink, shutil.rmtree) with nothing between
it and the other ranks' reads, before or after it (the else branch of the same test), or a folder made under
such a condition (os.makedirs, Path.mkdir) that the other ranks write into or list, or a write or folder made in
a branch on the rank after the writer's k-th collective and read, looked at or listed by the other ranks after no
more than k of theirs (rank 0: barrier(), then save; the others: barrier(), then load: the barriers pair with
each other, before the write); also every rank writing a file
of its own into one folder (os.path.join(folder, f"s{rank}")) and a rank under such a condition listing the folder
(os.listdir, glob.glob, Path.iterdir) or reading another rank's file with nothing between that orders every
rank's write: a broadcast(src=0) holds the others until rank 0 has sent, not rank 0 until they have written (on
gloo rank 0 can list the folder before a slower rank's file is there); put dist.barrier() between.

Exit status: 0 when nothing is found, 1 when something is, 2 when a file could not be linted: lint reads
only regular files (not FIFOs, devices or folders) of at most 64 MiB, in UTF-8 or the encoding a .py file
declares, that parse as Python or as a notebook; each file it refuses gets one line on stderr, and the other
files are still linted and reported.

Quiet on purpose: if/else branches that make the same calls, directly or through functions of the file
that always make the same collectives (rank 0: save_and_sync(), a save then barrier(); the others:
sync(), a barrier()); a loop whose length is the same on every
rank (range(rank * n, rank * n + n), shards[rank::world] or range(rank, n, world) where n is a multiple of
world, batches cut from such a slice; a constant n is checked against the world size the file states -
WORLD_SIZE = 2, nprocs=2, --nproc-per-node 2 - or else against 2, 4 and 8 ranks; a list whose length lint
cannot see, such as data a function returns, is not guessed at); a loop over an endless iterator (itertools.cycle/count) left by a break
every rank agrees on (a value after its all_reduce or broadcast); a collective on a group= whose members
all take the branch (if tp_rank == 0: all_reduce(..., group=dp_group) when the group holds exactly those
ranks, worked out from new_group/new_subgroups on sample worlds of 4, 8 and 12 ranks); point-to-point calls
ordered by rank (if rank == 0: send ... else: recv ...) or non-blocking (isend/irecv, batch_isend_irecv);
creating a missing file and then reading it on the same rank.

Not checked (lint reads source, it runs nothing; barrierlab run and the diagnosis check these, from what
the ranks actually did): how long anything takes - timeouts: a rank that prepares data past the group's
timeout before a barrier, or a slow save the others wait for, is correct code to lint; tensor sizes, shapes
and dtypes that come from data it cannot see (a tensor built with a shape read from a batch or a file, a
dtype that follows a value of no visible type), beyond the sizes, padded batches and accumulators above;
lengths of object lists other than a literal placeholder against another list; keys or lengths that come
from data it cannot read (a per-rank dataset whose length is not visible, a shard of a list whose length it
cannot see, dict keys filled from data in another function or file, a break on a value read from a file or
a batch, a data-dependent raise or early return in code every rank runs with its own batch: apart from a
model's output, lint does not treat each rank's batch as different); which process group a collective uses
when it cannot work it out (then it reports as if the group were every rank), and a src/dst that is a
global rank outside its group without a test that names it a group rank; installed libraries' own code
(beyond the table and master_only); calls through lambdas (except a lambda bound to a name and called by that
name: f = lambda: dist.barrier(); f()), containers or objects whose type it cannot see;
point-to-point peers computed from data or a loop, functions that make only one side of an exchange (the other
side in another function), batch_isend_irecv, and orders across functions; store keys built by a helper or from
data, and keys set by another program; children made by multiprocessing.Pool, concurrent.futures or
subprocess, and threads that make collectives; file and folder writes and
reads in different functions, or paths written differently; random state seeded per rank that reaches a
collective other than through a rank-dependent loop length or condition.
An exception caught inside a loop whose handler skips the iteration (except ...: continue) is taken to come
from the rank's own data: the collectives after it are reported.

Of Lightning, Accelerate and torchmetrics it cannot see: when Lightning runs a deferred sync (a
self.log(..., sync_dist=True) under is_global_zero is reported at the log line, but the ranks wait later,
inside trainer.fit); library hooks other than prepare_data that run on some ranks only (a logger of your own
without @rank_zero_only); a metric logged with self.log("name", metric) whose compute Lightning makes; the
number of update() calls when the loop's length comes from data it cannot read (a dataset's __len__, a
sampler without drop_last): only loops over values that differ by rank are counted; list states of
torchmetrics metrics not in its table, or a dist_sync_on_step/sync_on_compute passed through **kwargs of
another function; an Accelerator or metric held in a container or passed through a callback.
"""


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``python -m barrierlab.lint FILE...``; exit status 0 clean, 1 found, 2 unreadable file."""
    parser = argparse.ArgumentParser(
        prog="python -m barrierlab.lint", description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("paths", nargs="+", help=".py files or .ipynb notebooks")
    return run_command(parser.parse_args(argv).paths)


def run_command(paths: Sequence[str]) -> int:
    """Lint every path, print the report, and one line on stderr for each file that cannot be linted (the
    others are still linted). Exit status: 0 nothing found, 1 something found, 2 a file could not be linted."""
    findings: list[Finding] = []
    failed = 0
    for path in paths:
        try:
            findings += lint_file(path)
        except LintError as exc:
            print(f"barrierlab lint: {exc}", file=sys.stderr, flush=True)
            failed += 1
    if findings or failed < len(paths):
        text = report(findings)
        print(NOTHING_FOUND_TEMPLATE.format(where=" in the files lint could read") if failed and not findings else text)
    return 2 if failed else 1 if findings else 0


# --------------------------------------------------------------------------- inputs


def _json_int(text: str) -> float:
    return int(text) if len(text) <= 4000 else math.inf


#: The most JSON arrays and objects lint reads from one notebook: each costs Python about 60 bytes once parsed,
#: so 57 MB of ``[]`` took 1.47 GB before the code-size bound could apply (attack10 a07). A real notebook holds
#: a few per cell (its outputs are mostly text); brackets inside strings count too, and stay far below this.
MAX_JSON_CONTAINERS = 2_000_000


def _lint_notebook(path: Path) -> list[Finding]:
    data = _read_bytes(path)
    containers = data.count(b"[") + data.count(b"{")
    if containers > MAX_JSON_CONTAINERS:
        raise LintError(
            f"cannot lint {path}: not a notebook lint reads: {containers:,} JSON arrays and objects (at most "
            f"{MAX_JSON_CONTAINERS:,}); lint its code as a .py file (jupyter nbconvert --to script)"
        )
    try:
        # a 5,000-digit number in the metadata (valid JSON) is more than Python converts to an int (attack10 a06);
        # lint reads only the cells' source, so such a number is kept as infinity
        notebook = json.loads(_decode(data, "utf-8", path), parse_int=_json_int)
    except json.JSONDecodeError as exc:
        raise LintError(f"cannot lint {path}: not a notebook: invalid JSON ({exc.msg}, line {exc.lineno})") from None
    except RecursionError:
        raise LintError(f"cannot lint {path}: not a notebook: its JSON is nested too deeply") from None
    cells, key = _notebook_cells(notebook)
    if not isinstance(cells, list):
        raise LintError(f"cannot lint {path}: not a notebook: no list of cells")
    sources = []
    for number, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict):
            raise LintError(f"cannot lint {path}: not a notebook: cell {number} is not an object")
        if cell.get("cell_type") != "code":
            continue
        source = cell.get(key, "")
        if isinstance(source, list) and all(isinstance(line, str) for line in source):
            source = "".join(source)
        elif not isinstance(source, str):
            raise LintError(f"cannot lint {path}: not a notebook: cell {number}'s source is not text")
        sources.append((number, source))
    _check_code_size(sum(len(source) for _, source in sources), path)  # before any cell is parsed
    units = []
    for number, source in sources:
        source = "".join("\n" if _MAGIC.match(line) else line for line in source.splitlines(keepends=True))
        try:
            units.append(_Unit(ast.parse(source), source, cell=number))
        except (SyntaxError, ValueError, MemoryError):
            continue
    aliases = _imports([u.tree for u in units])
    for unit in units:
        unit.aliases = aliases
    return _Analysis(str(path), [*units, *_follow_imports(units, path.parent)]).run()


def _notebook_cells(notebook: object) -> tuple[object, str]:
    """The cells of a notebook and the key of a code cell's text: ``cells``/``source`` (nbformat 4), or the
    cells of the worksheets with ``input`` (nbformat 3, which old notebooks still are: attack13 a05, linted as
    empty before). None for anything else."""
    if not isinstance(notebook, dict):
        return None, "source"
    if "cells" in notebook:
        return notebook["cells"], "source"
    worksheets = notebook.get("worksheets")
    if isinstance(worksheets, list) and all(isinstance(w, dict) for w in worksheets):
        cells = [w.get("cells") for w in worksheets]
        if all(isinstance(c, list) for c in cells):
            return [cell for sheet in cells for cell in sheet], "input"
    return None, "source"


#: How far lint follows the learner's own imports: modules found next to the linted file, at most this many
#: files and this many imports deep (a module imported by a module imported by the file is depth 2).
MAX_FOLLOWED_FILES = 20
MAX_FOLLOW_DEPTH = 3


def _follow_imports(units: list[_Unit], folder: Path) -> list[_Unit]:
    """The learner's own modules the units import (``import helpers``, ``from helpers import f``,
    ``from pkg import mod``), found as ``folder/helpers.py`` or ``folder/pkg/mod.py`` (or a package's
    ``__init__.py``), as Python finds them next to a script; never installed packages. Their functions are
    known to the analysis (prefixed with the module's name) but their own code is not reported."""
    followed: list[_Unit] = []
    seen: set[str] = set()
    budget = MAX_CODE_CHARS - sum(len(u.source) for u in units)
    queue = [(u, 1) for u in units]
    while queue:
        unit, depth = queue.pop(0)
        if depth > MAX_FOLLOW_DEPTH:
            continue
        for name in _imported_modules(unit.tree):
            if name in seen or len(followed) >= MAX_FOLLOWED_FILES:
                continue
            seen.add(name)
            base = folder.joinpath(*name.split("."))
            file = next((f for f in (base.with_suffix(".py"), base / "__init__.py") if f.is_file()), None)
            if file is None:
                continue
            try:
                source = _read_source(file)
                _check_code_size(len(source), file)
                if len(source) > budget:
                    continue  # it would take the analysis past MAX_CODE_CHARS: not followed
                tree = _parse(source, file)
            except LintError:
                continue  # a helper lint cannot read is not followed; the file itself is still linted
            budget -= len(source)
            helper = _Unit(tree, source, aliases=_imports([tree]), report=False, prefix=name)
            followed.append(helper)
            queue.append((helper, depth + 1))
    return followed


def _imported_modules(tree: ast.Module) -> list[str]:
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module)
            names += [f"{node.module}.{a.name}" for a in node.names if a.name != "*"]
    return names


def _lint_object(obj: Any) -> list[Finding]:
    try:
        lines, start = inspect.getsourcelines(obj)
    except (OSError, TypeError) as exc:
        raise ValueError(f"cannot read the source of {obj!r}: {exc}") from exc
    raw = "".join(lines)
    source = textwrap.dedent(raw)
    indent = len(raw.splitlines()[0]) - len(source.splitlines()[0])
    tree = ast.parse(source)
    func = getattr(obj, "__func__", obj)
    namespace = getattr(func, "__globals__", None)
    if namespace is None:
        namespace = getattr(sys.modules.get(getattr(obj, "__module__", "") or ""), "__dict__", None)
    unit = _Unit(tree, source, offset=max(start, 1) - 1, indent=indent, aliases=_imports([tree]), namespace=namespace)
    return _Analysis(_object_path(obj), [unit], module=getattr(obj, "__module__", None)).run()


def _object_path(obj: Any) -> str:
    filename = inspect.getsourcefile(obj) or getattr(getattr(obj, "__code__", None), "co_filename", "") or ""
    cell = re.match(r"<ipython-input-(\d+)-", filename)
    if cell:
        return f"<cell {cell.group(1)}>"
    if not filename or filename.startswith("<") or re.search(r"ipykernel_\d+", filename):
        return getattr(obj, "__qualname__", getattr(obj, "__name__", "<function>"))
    return filename


def _imports(trees: Iterable[ast.Module]) -> dict[str, str]:
    aliases: dict[str, str] = {}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        aliases[a.asname] = a.name
                    else:
                        head = a.name.split(".")[0]
                        aliases[head] = head
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    if a.name == "*" and node.module in _STAR_MODULES:
                        # `from torch.distributed import *` brings the collectives and the rank helpers (attack14 a04)
                        for name in _STAR_NAMES:
                            aliases.setdefault(name, f"{node.module}.{name}")
                    elif a.name != "*":
                        aliases[a.asname or a.name] = f"{node.module}.{a.name}"
    return aliases


_STAR_MODULES = frozenset({"torch.distributed", "torch.distributed.distributed_c10d"})
#: What a star import of torch.distributed brings that lint reads: every op of the ops table, the rank helpers.
_STAR_NAMES = frozenset(op.name for op in ops.OPS if not op.name.startswith("_")) | frozenset(
    {
        "get_rank",
        "get_world_size",
        "get_node_local_rank",
        "init_process_group",
        "destroy_process_group",
        "new_group",
        "new_subgroups",
        "is_initialized",
    }
)


# --------------------------------------------------------------------------- model


@dataclass
class _Unit:
    tree: ast.Module
    source: str
    cell: int | None = None
    offset: int = 0
    indent: int = 0
    aliases: dict[str, str] = field(default_factory=dict)
    namespace: dict[str, Any] | None = None
    report: bool = True
    prefix: str | None = None  # a followed module: its dotted name, which prefixes its functions' keys
    _lines: list[str] | None = field(default=None, repr=False, compare=False)

    def text(self, node: ast.AST) -> str:
        return " ".join((self._segment(node) or ast.unparse(node)).split())

    def _segment(self, node: ast.AST) -> str | None:
        """``ast.get_source_segment`` on lines split once: it splits the whole source on every call, which
        made lint quadratic in the file's length (800 chained functions: 13 s in this one function)."""
        if getattr(node, "end_lineno", None) is None or getattr(node, "end_col_offset", None) is None:
            return None
        lines = self.lines()
        first, last = node.lineno - 1, node.end_lineno - 1  # type: ignore[attr-defined]
        if not 0 <= first <= last < len(lines):
            return None
        start, end = node.col_offset, node.end_col_offset  # type: ignore[attr-defined]
        if first == last:
            return lines[first].encode()[start:end].decode(errors="replace")
        head = lines[first].encode()[start:].decode(errors="replace")
        tail = lines[last].encode()[:end].decode(errors="replace")
        return "".join([head, *lines[first + 1 : last], tail])

    def lines(self) -> list[str]:
        """The unit's lines as the parser counts them (split once, with their line ends)."""
        if self._lines is None:
            split = _LINE_BREAK.split(self.source)
            self._lines = [a + b for a, b in zip(split[::2], [*split[1::2], ""])]
        return self._lines


@dataclass
class _Func:
    key: str
    node: ast.FunctionDef | ast.AsyncFunctionDef
    unit: _Unit
    self_class: str | None
    parent: str | None


@dataclass
class _Call:
    kind: str  # "coll" | "call"
    display: str
    target: str
    note: str = ""  # what a framework call or DDP issues inside, for the finding
    advice: str = ""  # added to the finding's fix (the table entry's advice)


@dataclass
class _Site:
    node: ast.Call
    collective: str
    callee: str | None
    note: str = ""
    advice: str = ""


@dataclass(frozen=True)
class _Built:
    """An object built by a constructor call: the dotted classes it is an instance of, as far as the file
    says (``local``: the class of the file it was built from), and the keywords it was given."""

    classes: tuple[str, ...]
    local: str | None
    options: dict[str, ast.expr] = field(default_factory=dict, compare=False, hash=False)
    #: for an element of a list of objects of several classes of the file (``[WandbLogger(a), StdOutLogger(a)]``),
    #: the classes of the file of the other elements: a method called on the element may be any of theirs
    alternatives: tuple[str, ...] = field(default=(), compare=False, hash=False)


def _switched_on(value: ast.expr | None, default: bool) -> bool:
    """Whether a keyword argument is on: ``default`` when absent; off only for a ``False``/``None``/``0``
    constant (an expression lint cannot evaluate counts as on)."""
    if value is None:
        return default
    return not (isinstance(value, ast.Constant) and value.value in (False, None, 0))


@dataclass(eq=False)
class _Item:
    """One step of a block's collective trace."""

    kind: str  # "op" | "exit" | "if" | "loop"
    key: tuple = ()
    test: ast.expr | None = None
    text: str = ""
    rank: bool = False
    body: list[_Item] = field(default_factory=list)
    orelse: list[_Item] = field(default_factory=list)
    site: _Site | None = None
    status: str | None = None
    node: ast.AST | None = None
    dynamic: bool = False


@dataclass(frozen=True)
class _Leave:
    cond: str
    exit: _Item | None
    statuses: frozenset[str]


_GRAD_PRESENCE = "whether this rank's batch gave the parameter a gradient"


def _grad_presence(test: ast.expr) -> str | None:
    """``p.grad is None`` (or ``is not None``, or ``p.grad`` alone): whether a parameter has a gradient depends on
    what this rank's own batch reached (a mixture-of-experts layer, a branch of the forward), so a loop that
    skips those parameters makes a different number of collectives on different ranks (the hand-written
    gradient averaging of PyTorch's distributed tutorial, on a model not every batch reaches whole)."""
    for node in ast.walk(test):
        grad = None
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.IsNot)):
            if isinstance(node.comparators[0], ast.Constant) and node.comparators[0].value is None:
                grad = node.left
        elif isinstance(test, ast.Attribute) or (isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)):
            grad = test.operand if isinstance(test, ast.UnaryOp) else test
        if isinstance(grad, ast.Attribute) and grad.attr == "grad":
            return _GRAD_PRESENCE
    return None


def _skips(body: list[ast.stmt]) -> bool:
    """Whether an ``except`` body leaves the iteration or the function (``continue``/``break``/``return``) as
    its last statement, or ends the process as a success (``sys.exit()``, ``sys.exit(0)``: torchrun then waits
    for the other ranks, corpus34's Megatron-LM item): the ranks that raised skip what follows, the others do not."""
    if not body:
        return False
    last = body[-1]
    return isinstance(last, (ast.Continue, ast.Break, ast.Return)) or (
        isinstance(last, ast.Expr) and isinstance(last.value, ast.Call) and _quiet_exit(last.value)
    )


def _quiet_exit(call: ast.Call) -> bool:
    """``sys.exit()``, ``exit(0)``, ``sys.exit(None)``: a call that ends the process with status 0."""
    if _dotted(call.func) not in _EXIT_CALLS or call.keywords or len(call.args) > 1:
        return False
    return not call.args or (isinstance(call.args[0], ast.Constant) and call.args[0].value in (0, None, False))


def _walk_items(items: Iterable[_Item]) -> Iterator[_Item]:
    """Every item of a trace, nested branches and loops included, in order. Iterative: nested generators cost
    each item one step per level above it, and an if/elif chain of 1,000 branches is 1,000 levels (attack28
    a10: lint's time grew as the square of such a chain)."""
    stack = [iter(items)]
    while stack:
        item = next(stack[-1], None)
        if item is None:
            stack.pop()
            continue
        yield item
        stack.append(iter(item.orelse))
        stack.append(iter(item.body))


def _sites(items: Iterable[_Item]) -> Iterator[_Site]:
    return (item.site for item in _walk_items(items) if item.site is not None)


def _key(item: _Item) -> tuple:
    """What ``item`` does, to compare traces by; an ``if``'s or loop's worked out once and kept on the item (an
    ``elif`` chain asks each case for its tail's: quadratic in the cases, attack30 a10)."""
    if item.kind == "op":
        return item.key
    if item.kind == "exit":
        return ("exit", item.status)
    kept = item.__dict__.get("_kept_key")
    if kept is None:
        tag = "rankif" if item.kind == "if" and item.rank else item.kind
        kept = item.__dict__["_kept_key"] = (tag, item.text, tuple(map(_key, item.body)), tuple(map(_key, item.orelse)))
    return kept


#: How many attributes deep a dotted name lint reads may be (``a.b.c`` is 2): a deeper chain is no name to lint
#: (None), so that the names of one chain's nodes, each asked for, take memory and time linear in the code
#: (an 8 kB ``a.b.b...`` chain 4,000 deep took 14-24 s, its names built and rebuilt: attack30 a10).
MAX_DOTTED_DEPTH = 64


def _dotted(node: ast.AST) -> str | None:
    """``a.b.c`` of a Name or a chain of attributes on one, at most :data:`MAX_DOTTED_DEPTH` deep; else None.
    Worked out once per node and kept on it (every node of a chain is asked, often several times)."""
    if isinstance(node, ast.Name):
        return node.id
    if not isinstance(node, ast.Attribute):
        return None
    kept = node.__dict__.get("_barrierlab_dotted", _dotted)
    if kept is not _dotted:
        return kept
    chain = [node]  # down to a node whose name is known: a Name, a kept name, or no name at all
    base: str | None = None
    while True:
        inner = chain[-1].value
        if isinstance(inner, ast.Name):
            base = inner.id
            break
        if not isinstance(inner, ast.Attribute):
            break
        kept = inner.__dict__.get("_barrierlab_dotted", _dotted)
        if kept is not _dotted:
            base = kept
            break
        chain.append(inner)
    depth = base.count(".") if base is not None else 0
    for link in reversed(chain):
        depth += 1
        base = f"{base}.{link.attr}" if base is not None and depth <= MAX_DOTTED_DEPTH else None
        link._barrierlab_dotted = base  # type: ignore[attr-defined]
    return base


def _ends_the_group(call: ast.Call) -> bool:
    """``destroy_process_group()`` of the default group (no group named), or ``accelerator.end_training()``."""
    name = _terminal(call.func)
    if name == "end_training":
        return isinstance(call.func, ast.Attribute)
    return name == "destroy_process_group" and not call.args and not call.keywords


def _takes_file_lock(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A ``@contextmanager`` function that makes a cross-process file lock (or calls ``fcntl.flock``/``lockf``)
    before it yields: its ``with`` block may run holding it."""
    if not any(
        _terminal(d.func if isinstance(d, ast.Call) else d).endswith("contextmanager") for d in func.decorator_list
    ):
        return False
    return any(
        isinstance(node, ast.Call)
        and (_terminal(node.func) in _FILE_LOCKS or _dotted(node.func) in ("fcntl.flock", "fcntl.lockf"))
        for node in ast.walk(func)
    )


#: A condition that cannot hold on the main process (rank 0): ``rank != 0``, ``rank > 0``, ``not
#: accelerator.is_main_process``.
_NOT_MAIN = re.compile(
    r"^\s*not\s+[\w.()]*(?:is_main\w*|main_process\w*|is_global_zero|is_master\w*)\s*$"
    r"|\b(?:rank|process_index|local_rank|global_rank)\s*(?:!=\s*0|>\s*0|>=\s*1)\b"
)


def _accelerate_receiver(func: ast.expr, aliases: dict[str, str]) -> bool:
    """Whether a ``main_process_first`` call is Accelerate's (``accelerator.``, ``state.``, ``PartialState().``, a
    name imported from accelerate): the one whose closing barrier an exception skips. Another library's, or one
    of an unknown receiver (``training_args.``), is not assumed to be."""
    if isinstance(func, ast.Name):
        return aliases.get(func.id, "").startswith("accelerate")
    if not isinstance(func, ast.Attribute):
        return False
    receiver = func.value.func if isinstance(func.value, ast.Call) else func.value
    root = _dotted(receiver) or ""
    module = aliases.get(root.split(".")[0], "")
    if module.startswith(("accelerate", "barrierlab", "transformers")):
        return module.startswith("accelerate")
    terminal = _terminal(receiver).lower()
    return terminal in _STATE_RECEIVERS or "accelerator" in terminal or terminal in ("partialstate", "acceleratorstate")


def _terminal(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _rank_name(name: str) -> bool:
    if name in _RANK_IDENTIFIERS:
        return True
    tokens = _CAMEL.sub("_", name).lower().split("_")
    # "per rank" is a count every rank shares (shards_per_rank, batches_per_rank), not a rank
    ranked = (t for i, t in enumerate(tokens) if not (i and tokens[i - 1] == "per"))
    return any(_RANK_TOKEN.fullmatch(t) for t in ranked) or any(p in _RANK_PAIRS for p in zip(tokens, tokens[1:]))


def _env_rank(node: ast.AST) -> bool:
    key: ast.AST | None = None
    if isinstance(node, ast.Subscript) and (_dotted(node.value) or "").endswith("environ"):
        key = node.slice
    elif isinstance(node, ast.Call) and node.args:
        func = _dotted(node.func) or ""
        if func.endswith(("environ.get", "getenv")):
            key = node.args[0]
    if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
        return False
    return _rank_name(key.value) or key.value in {"SLURM_PROCID", "SLURM_LOCALID", "SLURM_NODEID"}


def _file_check(node: ast.AST) -> bool:
    """A question to the file system (``os.path.exists(p)``, ``Path(p).is_file()``, ``fs.isdir(p)``): its answer
    can differ between ranks (node-local disks, a network file system's caches, a file another rank is still
    writing), so a condition on it is rank-dependent."""
    return (
        isinstance(node, ast.Call)
        and _terminal(node.func) in _FILE_CHECKS
        and (isinstance(node.func, ast.Attribute) or node.func.id in ("exists", "isfile", "isdir", "lexists"))
    )


def _looked_at(node: ast.Call) -> ast.expr | None:
    """The path a file check asks about (``os.path.exists(p)``: ``p``; ``Path(p).is_file()``: ``Path(p)``)."""
    if not _file_check(node):
        return None
    if node.args:
        return node.args[0]
    return node.func.value if isinstance(node.func, ast.Attribute) else None


def _unwrapper(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether a function of one parameter ``p`` returns the module a wrapper holds: every ``return`` hands back
    ``p.module``, ``getattr(p, "module", p)``, ``p.module if <test of p> else p`` (the test ``isinstance(p, ...)``
    or ``hasattr(p, "module")``), or ``p`` after ``if <that test>: return p.module``. The result holds no DDP
    wrapper: the ``else`` returns ``p`` only where ``p`` is not one."""
    params = [a.arg for a in (*func.args.posonlyargs, *func.args.args)]
    if params[:1] in (["self"], ["cls"]):
        params = params[1:]
    if len(params) != 1:
        return False
    [p] = params

    def is_p(node: ast.AST | None) -> bool:
        return isinstance(node, ast.Name) and node.id == p

    def module_of_p(node: ast.AST | None) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == "module" and is_p(node.value)

    def tests_p(test: ast.expr) -> bool:
        return (
            isinstance(test, ast.Call)
            and _terminal(test.func) in ("isinstance", "hasattr")
            and len(test.args) == 2
            and is_p(test.args[0])
            and (_terminal(test.func) == "isinstance" or ast.unparse(test.args[1]) in ("'module'", '"module"'))
        )

    def unwraps(value: ast.expr | None) -> bool:
        if module_of_p(value):
            return True
        if isinstance(value, ast.IfExp):
            return tests_p(value.test) and module_of_p(value.body) and is_p(value.orelse)
        return (
            isinstance(value, ast.Call)
            and _terminal(value.func) == "getattr"
            and len(value.args) == 3
            and is_p(value.args[0])
            and ast.unparse(value.args[1]) in ("'module'", '"module"')
            and is_p(value.args[2])
        )

    body = [s for s in func.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) == 1 and isinstance(body[0], ast.Return):
        return unwraps(body[0].value)
    return (
        len(body) == 2
        and isinstance(body[0], ast.If)
        and not body[0].orelse
        and tests_p(body[0].test)
        and len(body[0].body) == 1
        and isinstance(body[0].body[0], ast.Return)
        and module_of_p(body[0].body[0].value)
        and isinstance(body[1], ast.Return)
        and is_p(body[1].value)
    )


#: Collectives after which no rank goes on before every rank of the group has entered them: a rank's change of a
#: file between two of them is done before any rank leaves the second (:func:`_fenced_look`).
_FENCES = frozenset(
    {
        "barrier",
        "monitored_barrier",
        "wait_for_everyone",
        "all_reduce",
        "all_gather",
        "all_gather_object",
        "all_gather_into_tensor",
    }
)


def _fence(stmt: ast.stmt) -> bool:
    """``dist.barrier()`` (or another of :data:`_FENCES`) as a statement of its own."""
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and _terminal(stmt.value.func) in _FENCES


def _test_names_rank(test: ast.expr) -> bool:
    """Whether a test names the rank (``rank``, ``self.local_rank``, ``dist.get_rank()``): the name alone."""
    return any(
        (isinstance(n, ast.Name) and _rank_name(n.id)) or (isinstance(n, ast.Attribute) and _rank_name(n.attr))
        for n in ast.walk(test)
    )


def _group_test(test: ast.expr) -> bool | None:
    """True for ``dist.is_initialized()`` (or ``is_available() and is_initialized()``), False for its negation,
    else None."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _group_test(test.operand)
        return None if inner is None else not inner
    values = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    if any(isinstance(v, ast.Call) and _terminal(v.func) == "is_initialized" for v in values):
        return True
    return None


def _fenced(branch: list[ast.stmt], call: ast.Call) -> bool | None:
    """Whether ``call``, in ``branch``, runs only between two fences (:func:`_fence`) of a block every rank in
    ``branch`` goes through (``dist.barrier()``, then ``if rank == 0: make(path)``, then ``dist.barrier()``),
    reached through ``if``s that do not name the rank and ``with`` blocks; or only where no process group is
    set up (the ``else`` of ``if dist.is_initialized():``). None when ``call`` is not in ``branch``."""
    block = branch
    while True:
        index = next((i for i, stmt in enumerate(block) if any(n is call for n in ast.walk(stmt))), None)
        if index is None:
            return None if block is branch else False
        if any(_fence(s) for s in block[:index]) and any(_fence(s) for s in block[index + 1 :]):
            return True
        stmt = block[index]
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            block = stmt.body
        elif isinstance(stmt, ast.If) and not _test_names_rank(stmt.test):
            inside = any(n is call for s in stmt.body for n in ast.walk(s))
            if _group_test(stmt.test) is (not inside):  # no process group there: no other rank to race
                return True
            block = stmt.body if inside else stmt.orelse
        else:
            return False


def _fenced_look(
    test: ast.If,
    look: ast.Call,
    keys: set[str],
    changes: list[tuple[ast.Call, set[str], bool]],
    writers: dict[str, set[int]],
    functions: Iterable[str],
) -> bool:
    """Whether a look at a file in the test of ``test`` gets the same answer on every rank that shares the file
    system: every change of the file the program makes is in a branch of ``test`` between two collectives that
    every rank of that branch makes (Minerva's fix, commit fc61c317: ``if path.exists(): load`` / ``else:
    dist.barrier(); if rank == 0: create and cache; dist.barrier()``), or where no process group is set up, and
    every call a branch hands the path to either is such a change or is a function of the file that does not
    write it. No rank can change the file before every rank has looked (the first fence waits for all of them,
    and a rank that found the file skips it only if the file was there before any change), and every rank that
    looks again after the change comes after the second fence. A file a rank writes with no such fence (every
    rank's own ``if not exists: make``) is still a look whose answer differs, and so is one at a file the program
    never makes (node-local disks: Megatron-LM's tracker file, tests/lint_corpus); one the program makes behind
    fences, for the other ranks to read after the second, it already takes for a file every rank sees."""
    looked = _looked_at(look)
    text = ast.unparse(looked) if looked is not None else None
    fenced = False
    for call, changed, own in changes:
        if not (changed & keys) or own:
            continue
        if not any(_fenced(branch, call) for branch in (test.body, test.orelse)):
            return False
        fenced = True
    if not fenced:  # a file the program does not make: each rank's own file system answers (node-local disks)
        return False
    for call in _own_nodes([*test.body, *test.orelse]):
        if not isinstance(call, ast.Call) or text is None:
            continue
        handed = [
            i for i, arg in enumerate((*call.args, *(k.value for k in call.keywords))) if ast.unparse(arg) == text
        ]
        if not handed or any(_fenced(branch, call) for branch in (test.body, test.orelse)):
            continue
        name = _terminal(call.func) or ""
        if name in _REPORTING:
            continue
        if name not in functions or any(i in writers.get(name, ()) for i in handed):
            return False  # a call that may write the file (one lint cannot see into, or a writer of the file's)
    return True


def _path_keys(node: ast.expr, assigns: dict[str, list[ast.expr]], depth: int = 0) -> set[str]:
    """Texts a path is matched by (:meth:`_Analysis._prepare_looks`): the whole path, its last component
    (``os.path.join(d, NAME)``, ``d / NAME``), ``get_path(name)`` for a call whatever its receiver, and those of
    the value a name was assigned in its scope."""
    if isinstance(node, ast.Call) and _terminal(node.func) in ("Path", "PurePath") and len(node.args) == 1:
        node = node.args[0]
    keys = {ast.unparse(node)}
    if isinstance(node, ast.Call) and _terminal(node.func) == "join" and node.args:
        keys.add(ast.unparse(node.args[-1]))
    elif isinstance(node, ast.Call):
        keys.add(f"{_terminal(node.func)}({', '.join(ast.unparse(a) for a in node.args)})")
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        keys.add(ast.unparse(node.right))
    elif isinstance(node, ast.Name) and depth < 2:
        for value in assigns.get(node.id, ()):
            keys |= _path_keys(value, assigns, depth + 1)
    if isinstance(node, ast.Call) and _terminal(node.func) == "join" and node.args and depth < 2:
        last = node.args[-1]
        if isinstance(last, ast.Name):  # join(folder, name), name a parameter: what the callers hand it
            for value in assigns.get(last.id, ()):
                keys.add(ast.unparse(value))
    return keys


#: Calls that only report (a print, a logger's message): what may come before the raise of a sanity check.
_REPORTING = frozenset(("print", "debug", "info", "warning", "warn", "error", "exception", "critical", "log"))

#: Questions to a logger about its level: many training stacks set it per rank (transformers' TrainingArguments
#: logs at ``log_level`` on the main process and ``log_level_replica``, WARNING by default, elsewhere;
#: ``get_process_log_level``), so a collective under ``logger.isEnabledFor(logging.INFO)`` runs on some ranks only.
_LOG_LEVEL_CHECKS = frozenset({"isEnabledFor", "getEffectiveLevel"})
_LOG_LEVEL_TEXT = re.compile(r"\b(?:" + "|".join(sorted(_LOG_LEVEL_CHECKS)) + r")\(")


def _log_level_check(node: ast.AST) -> bool:
    """``logger.isEnabledFor(level)`` or ``logger.getEffectiveLevel()``: a logger's level is each process's own."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _LOG_LEVEL_CHECKS


#: Builtins whose result depends only on their arguments: of values agreed on every rank, it is agreed too.
_PLAIN_BUILTINS = frozenset(
    {
        "bool",
        "int",
        "float",
        "len",
        "tuple",
        "list",
        "sorted",
        "sum",
        "min",
        "max",
        "dict",
        "set",
        "abs",
        "round",
        "str",
    }
)


def _plain_of(value: ast.expr, equal: set[str]) -> bool:
    """Whether ``value`` is computed from the names in ``equal`` alone, through literals, operators, subscripts,
    comprehensions over them and :data:`_PLAIN_BUILTINS` (``sorted(p for part in everyone for p in part)``)."""
    bound = {
        n.id
        for c in ast.walk(value)
        if isinstance(c, ast.comprehension)
        for n in ast.walk(c.target)
        if isinstance(n, ast.Name)
    }
    read = False
    for node in ast.walk(value):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store):
            if node.id in equal:
                read = True
            elif node.id not in bound and node.id not in _PLAIN_BUILTINS:
                return False
        elif isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in _PLAIN_BUILTINS):
            return False
        elif isinstance(node, (ast.Lambda, ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr)):
            return False
    return read


#: Calls whose argument only seeds a random generator: ``manual_seed``, ``seed``, ``default_rng``, ``Random``,
#: ``RandomState``, ``PCG64``.
_SEEDING = frozenset({"manual_seed", "seed", "default_rng", "Random", "RandomState", "PCG64"})


def _seeds(call: ast.Call) -> bool:
    return _terminal(call.func) in _SEEDING


def _own_nodes(nodes: Iterable[ast.AST]) -> Iterator[ast.AST]:
    """Nodes of a scope, not descending into nested functions, classes or lambdas."""
    stack = list(nodes)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _SCOPES):
            stack.extend(c for c in ast.iter_child_nodes(node) if not isinstance(c, _SCOPES))


def _own_nodes_once(lists: Iterable[Iterable[list[ast.stmt]]]) -> Iterator[ast.AST]:
    """The nodes of ``_own_nodes([*a, *b])`` for each ``[a, b]`` of ``lists``, each node once: a subtree met
    again is not walked again (an ``elif`` chain's every ``else`` holds the rest of the chain: walking each
    one whole was quadratic in its cases)."""
    seen: set[int] = set()
    for branches in lists:
        stack = [node for branch in branches for node in branch]
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            yield node
            if not isinstance(node, _SCOPES):
                stack.extend(c for c in ast.iter_child_nodes(node) if not isinstance(c, _SCOPES))


def _target_names(target: ast.AST) -> list[str]:
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for elt in target.elts for n in _target_names(elt)]
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    name = _dotted(target)
    return [name] if name else []


#: torch's factories: the loop over what they return runs once per row, and the row count is their first size.
_FACTORIES = frozenset({"randn", "rand", "zeros", "ones", "empty", "full", "randint", "arange", "randperm"})
#: Keywords of a factory that say what the values are, not how many.
_FACTORY_VALUE_KEYWORDS = frozenset({"generator", "dtype", "device", "requires_grad", "layout", "pin_memory"})


def _unpack_path(target: ast.expr, name: str) -> tuple[int, ...]:
    """The indexes that lead to ``name`` in a tuple target (``(x, y), (xv, yv)``: x is (0, 0)); () if absent."""
    if isinstance(target, (ast.Tuple, ast.List)):
        for i, element in enumerate(target.elts):
            if isinstance(element, ast.Name) and element.id == name:
                return (i,)
            deeper = _unpack_path(element, name)
            if deeper:
                return (i, *deeper)
    return ()


_NOT_STRAIGHT = object()  # :meth:`_Walker._flow_length` does not apply: the name is assigned once


class _UncountedArgument(Exception):
    """A helper's parameter (see :meth:`_Walker._yielded_length`) whose argument's length or value lint cannot
    count on the calling side: the helper's count is not known either."""


#: Arithmetic that keeps a tensor's rows, and conversions that keep them (:meth:`_Walker._flow_length`).
_ELEMENTWISE = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Pow)
_CONVERSIONS = frozenset(
    {"float", "double", "half", "bfloat16", "long", "int", "to", "cpu", "cuda", "contiguous", "detach", "clone"}
)


def _assigned_names(node: ast.AST) -> set[str]:
    """The plain names a statement (or ``:=``) binds."""
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.NamedExpr)):
        targets = [node.target]
    elif isinstance(node, ast.With):
        targets = [i.optional_vars for i in node.items if i.optional_vars is not None]
    else:
        return set()
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def _factory_rows(call: ast.Call) -> ast.expr | None:
    """The expression of the number of rows a torch factory call makes (``torch.randn(4, 8, generator=g)``: 4),
    or None when it is not one or its size is not written out."""
    dotted = _dotted(call.func) or ""
    name = dotted.rpartition(".")[2]
    if name not in _FACTORIES or not dotted.startswith(("torch.", "th.")):
        return None
    size = next((k.value for k in call.keywords if k.arg == "size"), None)
    if any(k.arg not in _FACTORY_VALUE_KEYWORDS | {"size"} for k in call.keywords):
        return None
    if name in ("arange", "randperm"):
        return call.args[0] if len(call.args) == 1 and size is None else None
    if name == "randint":
        if size is None and len(call.args) in (2, 3):
            size = call.args[-1]
        first = size
    elif size is not None:
        first = size
    elif call.args:
        first = call.args[0]
    else:
        return None
    if isinstance(first, (ast.Tuple, ast.List)):
        return first.elts[0] if first.elts and not isinstance(first.elts[0], ast.Starred) else None
    return first if name not in ("randint", "full") else None


def _assigned_value(name: str, nodes: Iterable[ast.AST]) -> tuple[ast.expr, int | None] | None:
    """The first value ``nodes`` assign to ``name``, with the element of it the name takes (see
    :func:`_assignments`), or None."""
    return next(((value, index) for names, value, index in _assignments(nodes) if name in names), None)


def _assignments(nodes: Iterable[ast.AST]) -> list[tuple[list[str], ast.expr, int | None]]:
    """(target names, value, position): position ``i`` means the names take element ``i`` of what the value
    returns (``rank, world_size = get_dist_info()``), None the whole value."""
    pairs: list[tuple[list[str], ast.expr, int | None]] = []
    for node in nodes:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if (
                    isinstance(target, (ast.Tuple, ast.List))
                    and isinstance(node.value, (ast.Tuple, ast.List))
                    and len(target.elts) == len(node.value.elts)
                ):
                    pairs += [(_target_names(t), v, None) for t, v in zip(target.elts, node.value.elts)]
                elif (
                    isinstance(target, (ast.Tuple, ast.List))
                    and isinstance(node.value, ast.Call)
                    and not any(isinstance(e, ast.Starred) for e in target.elts)
                ):
                    pairs += [(_target_names(t), node.value, i) for i, t in enumerate(target.elts)]
                else:
                    pairs.append((_target_names(target), node.value, None))
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
            pairs.append((_target_names(node.target), node.value, None))
        elif isinstance(node, ast.NamedExpr):
            pairs.append((_target_names(node.target), node.value, None))
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:  # `with accelerator.split_between_processes(x) as mine:` binds this rank's share
                if item.optional_vars is not None and _splits_between_ranks(item.context_expr):
                    pairs.append((_target_names(item.optional_vars), item.context_expr, None))
    return pairs


def _unwrap_iter(bound: ast.expr) -> ast.expr:
    """``enumerate(x)``/``tqdm(x)``/``iter(x)`` -> ``x``: the loop runs as often as ``x`` yields."""
    while isinstance(bound, ast.Call) and _terminal(bound.func) in ("enumerate", "tqdm", "iter") and bound.args:
        bound = bound.args[0]
    return bound


_WORLD_WORDS = ("world", "replicas", "num_processes", "nprocs")


def _worldish(node: ast.AST) -> bool:
    name = _terminal(node.func) if isinstance(node, ast.Call) else _terminal(node)
    return any(w in name.lower() for w in _WORLD_WORDS)


def _rank_stride(node: ast.Subscript) -> bool:
    """``seq[rank::world_size]`` (also ``self.rank``, ``num_replicas``): rank r's share, every world-th item."""
    cut = node.slice
    return (
        isinstance(cut, ast.Slice)
        and cut.lower is not None
        and _rank_name(_terminal(cut.lower))
        and cut.upper is None
        and cut.step is not None
        and _worldish(cut.step)
    )


def _world_cut(node: ast.Subscript) -> bool:
    """``seq[: len(seq) - len(seq) % world]`` or ``seq[: n // world * world]``: cut to a multiple of the world."""
    cut = node.slice
    if not (isinstance(cut, ast.Slice) and cut.lower is None and cut.step is None and cut.upper is not None):
        return False
    ops = [n for n in ast.walk(cut.upper) if isinstance(n, ast.BinOp)]
    return any(isinstance(o.op, (ast.Mod, ast.FloorDiv)) and _worldish(o.right) for o in ops)


def _pads(node: ast.AST) -> bool:
    """``indices += indices[:padding]`` (torch's DistributedSampler) or a name with ``pad`` assigned: the list is
    padded to a multiple of the world size."""
    if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add) and isinstance(node.value, ast.Subscript):
        grown = _dotted(node.target)
        return grown is not None and any(_dotted(n) == grown for n in ast.walk(node.value.value))
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, ast.BinOp):
        grown = _dotted(node.targets[0])  # ``ids = ids + ids * (rem // n) + ids[: rem % n]`` (VITS)
        adds = [n for n in ast.walk(node.value) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Add)]
        return (
            grown is not None
            and bool(adds)
            and any(isinstance(n, ast.Subscript) and _dotted(n.value) == grown for n in ast.walk(node.value))
        )
    return isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and "pad" in node.id.lower()


def _paired_targets(node: ast.Assign) -> list[tuple[ast.expr, ast.expr]]:
    """(target, value) pairs of an assignment, ``a, b = x, y`` unpacked."""
    out: list[tuple[ast.expr, ast.expr]] = []
    for target in node.targets:
        if (
            isinstance(target, ast.Tuple)
            and isinstance(node.value, ast.Tuple)
            and len(target.elts) == len(node.value.elts)
        ):
            out += list(zip(target.elts, node.value.elts))
        else:
            out.append((target, node.value))
    return out


def _uneven_batches(units: Sequence[_Unit]) -> int | None:
    """The line of accelerate's ``even_batches=False`` given to ``Accelerator``/``DataLoaderConfiguration`` (or
    set as ``accelerator.even_batches = False``) in the reported code, if any."""
    for unit in units:
        if not unit.report:
            continue
        for node in ast.walk(unit.tree):
            if isinstance(node, ast.Call) and _terminal(node.func) in ("Accelerator", "DataLoaderConfiguration"):
                for k in node.keywords:
                    if k.arg == "even_batches" and isinstance(k.value, ast.Constant) and k.value.value is False:
                        return node.lineno + unit.offset
            elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and node.value.value is False:
                if any(isinstance(t, ast.Attribute) and t.attr == "even_batches" for t in node.targets):
                    return node.lineno + unit.offset
    return None


def _filled(nodes: Iterable[ast.AST]) -> list[tuple[list[str], ast.expr, int | None]]:
    """(container, value, None) for ``x.append(v)``/``extend``/``insert``/``add``/``update`` and ``x[k] = v``: the
    container holds what it is filled with."""
    pairs: list[tuple[list[str], ast.expr, int | None]] = []
    for node in nodes:
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("append", "extend", "insert", "add", "update")
            and node.args
        ):
            pairs.append((_target_names(node.func.value), node.args[-1], None))
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Subscript):
                    pairs.append((_target_names(target.value), node.value, None))
    return pairs


def _splits_between_ranks(node: ast.AST) -> bool:
    """Accelerate's ``split_between_processes(x)`` (also ``PartialState``'s): each rank gets its own share of
    ``x`` (``accelerate/state.py``), as many items as the others only when ``len(x)`` divides evenly or
    ``apply_padding=True`` pads the last share."""
    return isinstance(node, ast.Call) and _terminal(node.func) == "split_between_processes" and bool(node.args)


def _endless_generator(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A generator function of the file that never ends by itself: its body ends in ``while True:`` (or
    ``while 1:``) with a ``yield`` in it and no ``return``, and no ``break`` out of that loop (round 18: a mixture
    of data sources that restarts the one a rank used up; only the caller's exits end a loop over it)."""
    if not func.body:
        return False
    last = func.body[-1]
    if not (isinstance(last, ast.While) and isinstance(last.test, ast.Constant) and last.test.value in (True, 1)):
        return False
    inner = list(_own_nodes(last.body))
    if not any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in inner):
        return False
    if any(isinstance(n, ast.Return) for n in _own_nodes(func.body)):
        return False
    return not any(isinstance(n, ast.Break) for n in _loop_own_nodes(last.body))


def _scaled(node: ast.expr) -> tuple[int, ast.expr] | None:
    """``c * x`` or ``x * c`` (``c`` an int literal) -> (c, x); a plain name -> (1, the name); else None."""
    if isinstance(node, ast.Name):
        return 1, node
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        for const, other in ((node.left, node.right), (node.right, node.left)):
            if isinstance(const, ast.Constant) and type(const.value) is int and isinstance(other, ast.Name):
                return const.value, other
    return None


_NOT_CONSTANT = object()
_SAFE_TEST_NODES = (
    ast.Compare,
    ast.BoolOp,
    ast.UnaryOp,
    ast.Constant,
    ast.Name,
    ast.Load,
    ast.Tuple,
    ast.List,
    ast.Set,
    ast.cmpop,
    ast.boolop,
    ast.unaryop,
)


def _constant(value: ast.expr) -> object:
    """The value of a literal argument (``-1``, ``0``, ``None``, ``True``), else :data:`_NOT_CONSTANT`."""
    if isinstance(value, ast.Constant):
        return value.value
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub) and isinstance(value.operand, ast.Constant):
        operand = value.operand.value
        return -operand if type(operand) in (int, float) else _NOT_CONSTANT
    return _NOT_CONSTANT


def _negated(test: ast.expr) -> ast.expr:
    """The test an ``else`` branch of ``if test:`` runs under: ``x`` for ``not x``, else ``not (test)``."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return test.operand
    return ast.copy_location(ast.UnaryOp(op=ast.Not(), operand=test), test)


class _RenameSelf(ast.NodeTransformer):
    """``self.flag`` -> the name ``self__flag``, for :func:`_false_with`."""

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if isinstance(node.value, ast.Name) and node.value.id == "self":
            return ast.copy_location(ast.Name(id=f"self__{node.attr}", ctx=ast.Load()), node)
        return self.generic_visit(node)


def _false_with(test: ast.expr, given: dict[str, object]) -> bool:
    """Whether ``test``, made of comparisons of the names in ``given`` with literals, is false for those values
    (False when it reads anything else)."""
    names = {n.id for n in ast.walk(test) if isinstance(n, ast.Name)}
    if not names or not names <= set(given) or not all(isinstance(n, _SAFE_TEST_NODES) for n in ast.walk(test)):
        return False
    try:
        value = eval(compile(ast.Expression(test), "<test>", "eval"), {"__builtins__": {}}, dict(given))  # noqa: S307 - literals and comparisons only
    except Exception:  # noqa: BLE001 - a comparison of types that do not compare: not decided
        return False
    return value is False or (type(value) is int and value == 0)


def _loop_own_nodes(body: list[ast.stmt]):
    """The nodes of a loop's ``body`` a ``break`` there would leave that loop from: not inside inner loops."""
    stack = list(body)
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (*_SCOPES, ast.For, ast.AsyncFor, ast.While)):
                stack.append(child)


def _loop_targets(nodes: Iterable[ast.AST]) -> list[tuple[list[str], ast.expr, int | None]]:
    """(loop variables, iterable, None) of ``for`` loops and comprehensions: a loop variable takes the values of
    its iterable, so it differs between ranks when the iterable does (``for name in stages[rank]``). Not for an
    endless loop (``itertools.cycle``): that is the recipe in which every rank marks its own end of data and the
    ranks agree on leaving; its exits are checked instead."""
    pairs: list[tuple[list[str], ast.expr, int | None]] = []
    for n in nodes:
        if not isinstance(n, (ast.For, ast.AsyncFor, ast.comprehension)) or (
            isinstance(n.iter, ast.Call) and _terminal(n.iter.func) in _ENDLESS
        ):
            continue
        target, bound = n.target, n.iter
        # `for step, batch in enumerate(source)`: the step counts 0, 1, 2, ... whatever the source holds (round 18's
        # `if step >= MAX_STEPS: break` over a rank's own mixture was taken as a rank-dependent exit); it differs
        # between ranks only through `start=`
        while (
            isinstance(bound, ast.Call)
            and _terminal(bound.func) == "enumerate"
            and bound.args
            and isinstance(target, (ast.Tuple, ast.List))
            and len(target.elts) == 2
        ):
            start = (
                bound.args[1]
                if len(bound.args) > 1
                else next((k.value for k in bound.keywords if k.arg == "start"), None)
            )
            if start is not None:
                pairs.append((_target_names(target.elts[0]), start, None))
            target, bound = target.elts[1], bound.args[0]
        pairs.append((_target_names(target), bound, None))
    return pairs


_LOADER = re.compile(r"(?i)(?:loader|batches)$")


def _batch_targets(nodes: Iterable[ast.AST]) -> list[tuple[list[str], ast.expr, int]]:
    """(loop variables, loader, line) of ``for`` loops over a data loader (``for x, y in train_loader``,
    ``for step, batch in enumerate(loader)``: the batch, not the step): in data-parallel training each rank
    draws its own shard, so what is computed from the batch is this rank's own data."""
    found = []
    for n in nodes:
        if not isinstance(n, (ast.For, ast.AsyncFor)):
            continue
        target, bound = n.target, n.iter
        while isinstance(bound, ast.Call) and _terminal(bound.func) in ("enumerate", "tqdm", "iter") and bound.args:
            if _terminal(bound.func) == "enumerate":
                if not (isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) == 2):
                    break
                target = target.elts[1]
            bound = bound.args[0]
        name = _terminal(bound.func) if isinstance(bound, ast.Call) else _terminal(bound)
        if name and (_LOADER.search(name) or name == "DataLoader"):
            found.append((_target_names(target), bound, n.lineno))
    return found


_PROPERTIES = frozenset({"property", "cached_property"})
#: torch's data loader, whose ``len()`` is its dataset's.
_LOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
#: Modules whose classes are ``IterDataPipe``s: a ``DataLoader`` over one makes, at each new iterator, a gloo
#: ``new_group`` and a broadcast of a shared seed in it once the default group is up (torch/utils/data/dataloader.py,
#: ``_BaseDataLoaderIter.__init__`` and ``_share_dist_seed``; round 37's RETURNN item).
_DATAPIPE_MODULES = ("torch.utils.data.datapipes.iter", "torchdata.datapipes.iter")
_DATAPIPE_BASES = frozenset({"IterDataPipe"})
#: ``dataclasses.replace(obj, **changes)`` ends ``return obj.__class__(**changes)``: it builds a new object through
#: the class's ``__init__``, which for a ``@dataclass`` runs ``__post_init__`` again (CPython Lib/dataclasses.py,
#: ``replace``/``_replace``: "Create the new object, which calls __init__() and __post_init__() (if defined)").
_DATACLASS_COPIES = frozenset({"dataclasses.replace"})
_DATACLASS_DECORATORS = frozenset({"dataclass", "dataclasses.dataclass"})
#: Builtins that call a method of their argument's class (``len(loader)`` runs ``__len__``, ``print(meter)`` and
#: ``str(meter)`` run ``__str__``): the methods tried, in order, for each argument.
_DUNDER_BUILTINS = {
    "len": ("__len__",),
    "str": ("__str__", "__repr__"),
    "print": ("__str__", "__repr__"),
    "repr": ("__repr__",),
    "format": ("__format__", "__str__", "__repr__"),
}
_NEGATED = re.compile(r"not \((.*)\)", re.S)


def _condition_line(unit: _Unit, cond: str, node: ast.AST) -> int | None:
    """The nearest line above ``node`` (else below it: a loop's exit test) in its unit that holds the
    condition's text, when it is not ``node``'s own line: the ``if``/``for``/``while`` a reader should look at.
    None when the condition is a description rather than source (``f() raises (line 4)``)."""
    text = cond.strip()
    negated = _NEGATED.fullmatch(text)
    if negated is not None:
        text = negated.group(1)
    first = text.splitlines()[0].strip() if text else ""
    if len(first) < 3:
        return None
    lines = unit.lines()
    above = range(min(node.lineno, len(lines)), max(0, node.lineno - 400), -1)
    below = range(node.lineno + 1, min(len(lines), node.lineno + 400) + 1)  # a loop's exit after the collective
    # an `else:` branch's condition is the `if`'s test negated (`rank != 0` for `if rank == 0:`, review52b)
    texts = [first, *_flipped(first), *([first[4:]] if first.startswith("not ") and len(first) > 7 else [])]
    for number in (*above, *below):
        if any(text in lines[number - 1] for text in texts):
            return None if number == node.lineno else number + unit.offset
    return None


_FLIPS = (" != ", " == "), (" == ", " != "), (" >= ", " < "), (" <= ", " > "), (" > ", " <= "), (" < ", " >= ")
_FLIPS += ((" is not ", " is "), (" not in ", " in "))


def _flipped(text: str) -> list[str]:
    """``text`` with its one comparison operator negated (``a != b`` -> ``a == b``), as the source spells the
    test an `else:` branch negates; [] when it has none or several."""
    found = [(op, other) for op, other in _FLIPS if op in text]
    if len(found) == 1 and text.count(found[0][0]) == 1:
        return [text.replace(*found[0])]
    return []


def _blocks(body: list[ast.stmt]) -> Iterator[list[ast.stmt]]:
    """``body`` and every statement block nested in it (``if``/loop/``with``/``try`` bodies), not inside nested
    functions or classes."""
    yield body
    for stmt in body:
        if isinstance(stmt, _SCOPES):
            continue
        for part in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, part, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                yield from _blocks(inner)
        for handler in getattr(stmt, "handlers", []):
            yield from _blocks(handler.body)


def _changed_names(
    stmts: Iterable[ast.AST],
    modules: frozenset[str] = frozenset(),
    skip: set[int] = frozenset(),  # type: ignore[assignment]
) -> set[str]:
    """Names a block assigns, augments or changes in place (``x = ...``, ``x += 1``, ``x.append(...)``,
    ``x[k] = v``), not descending into nested functions; ``modules`` (imported names: ``os.remove(p)``
    changes no ``os``) are left out."""
    names: set[str] = set()
    for node in _own_nodes(stmts):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                while isinstance(target, ast.Subscript):
                    target = target.value
                names.update(_target_names(target))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _MUTATORS:
            if id(node) not in skip:
                names.update(n for n in _target_names(node.func.value) if n.partition(".")[0] not in modules)
    return names


_CONTAINERS = (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)
_CONTAINER_CALLS = frozenset({"list", "dict", "set", "defaultdict", "OrderedDict", "deque", "Counter"})


def _containers(nodes: Iterable[ast.AST]) -> set[str]:
    """Names assigned a list, dict or set in the scope (``batches = []``): ``x.append(...)`` changes them."""
    return {
        name
        for names, value, _ in _assignments(nodes)
        if isinstance(value, _CONTAINERS) or (isinstance(value, ast.Call) and _terminal(value.func) in _CONTAINER_CALLS)
        for name in names
    }


def _controlled(nodes: list[ast.AST], modules: frozenset[str] = frozenset()) -> list[tuple[ast.expr, set[str]]]:
    """(test, names its branches change) for every ``if`` and ``while`` among ``nodes``: when the test differs
    between ranks, so do those names (a patience counter bumped under ``if val_loss < best``). A call such as
    ``x.update(...)`` counts only for a list, dict or set of the scope (not a progress bar or a metric)."""
    out = []
    containers = _containers(nodes)
    calls = {
        id(n)
        for n in nodes
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and _dotted(n.func.value) not in containers
    }
    memo: dict[int, set[str]] = {}

    def changed_in(stmts: list[ast.stmt]) -> set[str]:
        names: set[str] = set()
        for stmt in stmts:
            if isinstance(stmt, (ast.If, ast.While)):  # worked out once per branch (attack21 a05: elif chains)
                if id(stmt) not in memo:
                    memo[id(stmt)] = changed_in([*stmt.body, *stmt.orelse])
                names |= memo[id(stmt)] | _changed_names([stmt.test], modules, calls)
            else:
                names |= _changed_names([stmt], modules, calls)
        return names

    for node in nodes:
        if isinstance(node, (ast.If, ast.While)):
            changed = changed_in([*node.body, *node.orelse])
            if changed:
                out.append((node.test, changed))
    return out


def _assert_written_out(stmt: ast.If) -> bool:
    """``if <check>: raise SomeError(...)`` (perhaps after a print or log call): a sanity check written out, as
    ``assert`` would say it. With a check the same on every rank, lint takes it as it takes an ``assert``: not a
    way out of the function. A check meant never to fail (a meter's count against the dataset's length, inside a
    rank-0-only report: round 18's meter reset) is not a rank leaving early; a raise the rank's own test
    decides still is."""
    if stmt.orelse or not isinstance(stmt.body[-1], ast.Raise) or stmt.body[-1].exc is None:
        return False
    exc = stmt.body[-1].exc
    name = _terminal(exc.func if isinstance(exc, ast.Call) else exc)
    if not name or not name.endswith(("Error", "Exception")):
        return False
    return all(
        isinstance(other, ast.Expr)
        and isinstance(other.value, ast.Call)
        and (_terminal(other.value.func) or "") in _REPORTING
        for other in stmt.body[:-1]
    )


def _missing_file_branch(stmt: ast.If) -> list[ast.stmt] | None:
    """The branch of ``if [not] os.path.exists(p):`` taken when the file is missing, when every raise in it is a
    ``FileNotFoundError`` (YOLOv5's ``check_dataset`` inside ``torch_distributed_zero_first``: local rank 0
    downloads, the others raise if the dataset is still not there; round 22), else None."""
    test = stmt.test
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    if not _file_check(test.operand if negated else test):  # type: ignore[attr-defined]
        return None
    branch = stmt.body if negated else stmt.orelse
    raises = [n for n in _own_nodes(branch) if isinstance(n, ast.Raise)]
    if not raises or any(
        n.exc is None or _terminal(n.exc.func if isinstance(n.exc, ast.Call) else n.exc) != "FileNotFoundError"
        for n in raises
    ):
        return None
    return branch


def _ranked_raise(
    stmts: list[ast.stmt],
    ranked: Callable[[ast.expr], bool],
    raises: Callable[[ast.Call], bool] = lambda call: False,
) -> tuple[str, ast.AST] | None:
    """The first ``raise`` (or ``sys.exit()``, or a call ``raises`` accepts: a helper of the file that can
    raise) of a block, outside a ``try`` with handlers, under an ``if`` whose test ``ranked`` accepts, as (the
    test's text, the raise). A sanity check written out (``if bad: raise``) is taken as an assert, under a rank
    test too (round18's correct_meter_reset_every_rank: rank 0 checks its validation count)."""

    def visit(nodes: list[ast.AST], cond: str | None) -> tuple[str, ast.AST] | None:
        for node in nodes:
            if isinstance(node, _SCOPES):
                continue
            if isinstance(node, ast.Try) and node.handlers:
                found = visit([*node.orelse, *node.finalbody, *(h for h in node.handlers)], cond)
            elif isinstance(node, ast.If) and _assert_written_out(node) and not ranked(node.test):
                found = None  # a sanity check: taken as an assert
            elif isinstance(node, ast.If) and _missing_file_branch(node) is not None:
                # ``if not os.path.exists(p): ... raise FileNotFoundError``: a precondition (the file another rank
                # makes first is there), as an assert states it; the other branch is visited as usual
                present = node.orelse if _missing_file_branch(node) is node.body else node.body
                found = visit(present, cond)
            elif isinstance(node, ast.If):
                inner = ast.unparse(node.test) if cond is None and ranked(node.test) else cond
                found = visit(node.body, inner) or visit(node.orelse, f"not ({inner})" if inner != cond else cond)
            elif isinstance(node, ast.Raise) and node.exc is None:
                found = None  # re-raising the error being handled: a crash path, not a rank leaving early
            elif cond is not None and (
                isinstance(node, ast.Raise)
                or (isinstance(node, ast.Call) and (_dotted(node.func) in _EXIT_CALLS or raises(node)))
            ):
                return cond, node
            else:
                found = visit(list(ast.iter_child_nodes(node)), cond)
            if found is not None:
                return found
        return None

    return visit(list(stmts), None)


def _closure(
    pairs: list[tuple[list[str], ast.expr, int | None]],
    names: set[str],
    test: Callable[[ast.expr, int | None, set[str]], bool],
) -> set[str]:
    """The names assigned (transitively) from a value ``test`` accepts, given that ``test`` depends on the
    set only through the names and dotted attributes the value mentions: each assignment is tested once, and
    again only when a name it reads joins the set (a worklist, so a chain of n assignments costs n tests,
    not n squared)."""
    readers: dict[str, list[int]] = {}
    for i, (_, value, _) in enumerate(pairs):
        for node in ast.walk(value):
            name = node.id if isinstance(node, ast.Name) else _dotted(node) if isinstance(node, ast.Attribute) else None
            if name:
                readers.setdefault(name, []).append(i)
    queue = list(range(len(pairs)))
    while queue:
        targets, value, index = pairs[queue.pop()]
        if set(targets) <= names or not test(value, index, names):
            continue
        for name in targets:
            if name not in names:
                names.add(name)
                queue.extend(readers.get(name, ()))
    return names


def _linear(node: ast.AST) -> tuple[dict[tuple[str, ...], int], dict[str, ast.AST]] | None:
    """``node`` as a polynomial with integer coefficients over opaque atoms (names, calls...):
    ``rank * n + n`` -> {("n", "rank"): 1, ("n",): 1}. None if it is not made of +, -, * and integers."""
    atoms: dict[str, ast.AST] = {}

    def walk(n: ast.AST) -> dict[tuple[str, ...], int] | None:
        if isinstance(n, ast.Constant) and type(n.value) is int:
            return {(): n.value}
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            inner = walk(n.operand)
            return None if inner is None else {k: -v for k, v in inner.items()}
        if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Add, ast.Sub, ast.Mult)):
            left, right = walk(n.left), walk(n.right)
            if left is None or right is None:
                return None
            out: dict[tuple[str, ...], int] = {}
            if isinstance(n.op, ast.Mult):
                for (ka, va), (kb, vb) in itertools.product(left.items(), right.items()):
                    key = tuple(sorted(ka + kb))
                    out[key] = out.get(key, 0) + va * vb
            else:
                sign = 1 if isinstance(n.op, ast.Add) else -1
                out = dict(left)
                for k, v in right.items():
                    out[k] = out.get(k, 0) + sign * v
            return {k: v for k, v in out.items() if v}
        if isinstance(n, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)):
            text = ast.unparse(n)
            atoms[text] = n
            return {(text,): 1}
        return None

    poly = walk(node)
    return None if poly is None else (poly, atoms)


_NPROC_TEXT = re.compile(r"--nproc[-_]per[-_]node[= ](\d+)\b")
_WORLD_NAMES = frozenset({"world_size", "nprocs", "nproc_per_node", "num_processes"})


#: World sizes a constant-length split is checked against when the file states none: ``n`` items dealt over the
#: ranks are reported when ``n`` is not a multiple of one of them.
_USUAL_WORLDS = (2, 4, 8)


def _world_size(units: Sequence[_Unit]) -> int | None:
    """The world size the file states, if it states exactly one: a module constant ``WORLD_SIZE = 2``/
    ``world_size = 2``, a literal ``nprocs=``/``world_size=``/``nproc_per_node=`` keyword
    (``mp.spawn(..., nprocs=2)``), or ``--nproc-per-node 2`` in its text (a torchrun line in a docstring)."""
    sizes: set[int] = set()
    for unit in units:
        for node in unit.tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                if node.targets[0].id.lower() in _WORLD_NAMES and _const_ints(node.value):
                    sizes.update(_const_ints(node.value) or ())
        for node in ast.walk(unit.tree):
            if isinstance(node, ast.keyword) and node.arg in _WORLD_NAMES and _const_ints(node.value):
                sizes.update(_const_ints(node.value) or ())
        sizes.update(int(m) for m in _NPROC_TEXT.findall(unit.source))
    sizes.discard(0)
    return sizes.pop() if len(sizes) == 1 and min(sizes) > 0 else None


#: Exceptions that every rank meets alike (the same installation, the same code): a handler for them is
#: not a rank's own path.
_ENVIRONMENT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "NotImplementedError", "SyntaxError"})


def _swallows(handler: ast.ExceptHandler) -> bool:
    """Whether an ``except`` handler can go on after a rank's own error: it catches errors that are a rank's own
    (not ``ImportError``-like ones every rank raises alike, not the end of an iterator or an interrupt), and
    not every path through it raises or exits."""
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    names = {_terminal(k) for k in kinds if k is not None}
    if _environment_error(handler.type) or (names and names <= _NOT_OWN_ERRORS):
        return False
    return not _always_raises(handler.body)


def _from_parameters(func: _Func) -> dict[str, str]:
    """A function's parameters (``self`` and ``cls`` aside) and the names computed from them, each with the
    parameter it comes from: assigned from one, a loop variable over one, or a container filled with such values
    (``for x, y in samples: ... outputs.append({"n": x.shape[0]})``)."""
    args = func.node.args
    params = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs) if a.arg not in ("self", "cls")]
    nodes = list(_own_nodes(func.node.body))
    origin = {p: p for p in params}
    flows = _assignments(nodes) + _loop_targets(nodes) + _filled(nodes)
    for _ in range(3):
        for names, value, _ in flows:
            source = next((origin[n.id] for n in ast.walk(value) if isinstance(n, ast.Name) and n.id in origin), None)
            for name in names:
                if source is not None:
                    origin.setdefault(name, source)
    return origin


def _parameter_sources(func: _Func) -> dict[str, set[str]]:
    """Like :func:`_from_parameters`, but each name with every parameter it is computed from
    (``loss = cross_entropy(model(feats), labels)`` with ``feats, labels = batch``: ``model`` and ``batch``)."""
    args = func.node.args
    params = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs) if a.arg not in ("self", "cls")]
    nodes = list(_own_nodes(func.node.body))
    sources: dict[str, set[str]] = {p: {p} for p in params}
    flows = _assignments(nodes) + _loop_targets(nodes) + _filled(nodes)
    for _ in range(4):
        grew = False
        for names, value, _ in flows:
            found = {q for n in ast.walk(value) if isinstance(n, ast.Name) and n.id in sources for q in sources[n.id]}
            for name in names:
                if found - sources.setdefault(name, set()):
                    sources[name] |= found
                    grew = True
        if not grew:
            break
    return {name: found for name, found in sources.items() if found}


def _length_test(test: ast.expr, names: set[str]) -> bool:
    """Whether ``test`` reads ``names`` only for their length: ``not rows``, ``rows`` alone, ``len(rows) == 0``,
    ``x.shape[0] < 2``, ``x.size(0)``, ``x.numel()`` (and reads one of them so at least once)."""
    sized: set[int] = set()
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
    for node in ast.walk(test):
        if isinstance(node, ast.BoolOp):
            for value in node.values:
                inner = value.operand if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not) else value
                if isinstance(inner, ast.Name):
                    sized.add(id(inner))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len" and node.args:
            sized.add(id(node.args[0]))
        elif isinstance(node, ast.Attribute) and node.attr in ("shape", "size", "numel"):
            sized.add(id(node.value))
    if isinstance(test, ast.Name):
        sized.add(id(test))
    uses = [n for n in ast.walk(test) if isinstance(n, ast.Name) and n.id in names]
    return bool(uses) and all(id(n) in sized for n in uses)


def _caught_raises(stmt: ast.Try) -> set[int]:
    """The ``raise``s in a ``try``'s body (outside nested functions) that one of its handlers catches and goes on
    from, to the statement after the ``try`` (no ``return``, ``raise``, ``break``, ``continue`` or exit call in
    it): ``if rank == 1: raise ValueError(...)`` under ``except ValueError: pass`` leaves nothing early."""
    going_on = [
        h
        for h in stmt.handlers
        if not any(isinstance(n, (ast.Return, ast.Raise, ast.Break, ast.Continue)) for n in _own_nodes(h.body))
        and not _always_raises(h.body)
    ]
    if not going_on:
        return set()

    def catches(handler: ast.ExceptHandler, raised: str | None) -> bool:
        if handler.type is None:
            return True
        kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        names = {_terminal(k) for k in kinds}
        if "BaseException" in names:
            return True
        return raised is not None and (raised in names or ("Exception" in names and raised not in _NOT_OWN_ERRORS))

    caught = set()
    for node in _own_nodes(stmt.body):
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            raised = _terminal(exc) if isinstance(exc, (ast.Name, ast.Attribute)) else None
            if any(catches(h, raised) for h in going_on):
                caught.add(id(node))
    return caught


_NOT_OWN_ERRORS = frozenset({"StopIteration", "StopAsyncIteration", "KeyboardInterrupt", "SystemExit", "GeneratorExit"})


def _filtered_messages(handler: ast.ExceptHandler) -> list[str]:
    """The texts a handler's first statement asks the error's message for, re-raising the rest: ``if "no
    samples" not in str(error): raise`` (``and``-ed/``or``-ed texts too); empty otherwise."""
    if handler.name is None or not handler.body:
        return []
    first = handler.body[0]
    if not (isinstance(first, ast.If) and not first.orelse and _reraises(first.body)):
        return []
    tests = (
        first.test.values if isinstance(first.test, ast.BoolOp) and isinstance(first.test.op, ast.And) else [first.test]
    )
    texts = []
    for test in tests:
        if not (
            isinstance(test, ast.Compare)
            and len(test.ops) == 1
            and isinstance(test.ops[0], ast.NotIn)
            and isinstance(test.left, ast.Constant)
            and isinstance(test.left.value, str)
            and test.left.value
        ):
            return []
        message = test.comparators[0]
        if not (
            isinstance(message, ast.Call)
            and _terminal(message.func) == "str"
            and len(message.args) == 1
            and isinstance(message.args[0], ast.Name)
            and message.args[0].id == handler.name
        ):
            return []
        texts.append(test.left.value)
    return texts


def _raise_messages(node: ast.Raise) -> list[str]:
    """The literal text of a ``raise``'s message (the parts of an f-string written out)."""
    exc = node.exc
    if not (isinstance(exc, ast.Call) and exc.args):
        return []
    first = exc.args[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        return [first.value]
    if isinstance(first, ast.JoinedStr):
        return [v.value for v in first.values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
    return []


def _always_raises(body: list[ast.stmt]) -> bool:
    """Whether every path through ``body`` reaches a ``raise`` or an exit call."""
    for stmt in body:
        if isinstance(stmt, ast.Raise):
            return True
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and _dotted(stmt.value.func) in _EXIT_CALLS:
            return True
        if isinstance(stmt, ast.If) and _always_raises(stmt.body) and _always_raises(stmt.orelse):
            return True
    return False


def _after_raising(
    body: list[ast.stmt], per: list[list[_Item]], works_first: Callable[[ast.Call], bool]
) -> list[_Item]:
    """The collectives of a ``try`` body (``per``: each statement's trace) that a rank can skip by raising first:
    every one after a statement that does work of its own (:func:`_does_work`), and calls of the file's functions
    that do work of their own before they reach a collective (``works_first``). A collective the body starts
    with is made by every rank before anything of the rank's own can raise (DeepSpeed-Chat's ``try: losses =
    get_all_reduce_mean(losses) except: pass``, whose helper starts with its all_reduce: attack24 a10)."""
    skipped: list[_Item] = []
    worked = False
    for stmt, items in zip(body, per):
        if worked:
            skipped += items
        else:
            skipped += [i for i in items if i.site is not None and i.site.callee and works_first(i.site.node)]
        worked = worked or _does_work(stmt)
    return skipped


def _starts_as_float(written: str, scope: list[ast.AST]) -> bool:
    """Whether ``written`` is given a float literal in ``scope`` (``total = 0.0``, ``steps, total = 0, 0.0``) and no
    other plain value: an accumulator that starts as a Python float stays one when numbers are added to it."""
    values: list[ast.expr] = []
    for node in scope:
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
            continue
        for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
            if _dotted(target) == written:
                values.append(node.value)
            elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                values += [v for t, v in zip(target.elts, node.value.elts) if _dotted(t) == written]
    return bool(values) and all(isinstance(v, ast.Constant) and type(v.value) is float for v in values)


def _op_keys(items: list[_Item]) -> list[tuple]:
    """The keys of the collective calls of ``items``, in order, nested branches and loops included."""
    return [_key(i) for i in _walk_items(items) if i.kind == "op"]


def _reraises(body: list[ast.stmt]) -> bool:
    """A block that is a bare ``raise`` (re-raising the error being handled), after reports at most."""
    return bool(body) and isinstance(body[-1], ast.Raise) and body[-1].exc is None


def _after_own_work(body: list[ast.stmt]) -> set[int]:
    """The calls of a block (and of the ``if``/``with``/``try`` blocks and loop bodies in it) made after a statement
    of the same block, or of a block around it, that does work of its own (:func:`_does_work`): where an error
    of that work leaves the block first."""
    found: set[int] = set()
    worked = False
    for stmt in body:
        if worked:
            found.update(id(n) for n in _own_nodes([stmt]) if isinstance(n, ast.Call))
            continue
        if isinstance(stmt, ast.If):
            found |= _after_own_work(stmt.body) | _after_own_work(stmt.orelse)
        elif isinstance(stmt, (ast.With, ast.AsyncWith, ast.For, ast.AsyncFor, ast.While)):
            found |= _after_own_work(stmt.body)
        elif isinstance(stmt, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            found |= _after_own_work(stmt.body)
        worked = _does_work(stmt)
    return found


def _does_work(stmt: ast.stmt) -> bool:
    """Whether a statement does something that can raise on one rank: a call other than a report, an index."""
    for node in _own_nodes([stmt]):
        if isinstance(node, ast.Subscript):
            return True
        if isinstance(node, ast.Call) and (_terminal(node.func) or "") not in _REPORTING | COLLECTIVES:
            return True
    return False


def _environment_error(kind: ast.expr | None) -> bool:
    """Whether an ``except`` clause catches only errors that every rank raises alike (``ImportError``)."""
    if kind is None:
        return False
    kinds = kind.elts if isinstance(kind, ast.Tuple) else [kind]
    return all(_terminal(k) in _ENVIRONMENT_ERRORS for k in kinds)


def _handler_names(nodes: Iterable[ast.AST]) -> set[str]:
    """Status flags an ``except`` handler sets (``run_failed = True``, ``status = "error"``, ``errors += 1``,
    ``message = str(err)``) and its ``as err``: they record what happened on this rank only, so a later test of
    them differs between ranks unless they are agreed on. Other values a handler assigns (``it = iter(loader)``
    on ``StopIteration``) are left to the ordinary flow of values."""
    names: set[str] = set()
    for handler in nodes:
        if not isinstance(handler, ast.ExceptHandler) or _environment_error(handler.type):
            continue
        if handler.name:
            names.add(handler.name)
        for names_, value, _ in _assignments(_own_nodes(handler.body)):
            flag = isinstance(value, ast.Constant) or (
                handler.name is not None
                and any(isinstance(n, ast.Name) and n.id == handler.name for n in ast.walk(value))
            )
            if flag:
                names.update(n for n in names_ if "." not in n or n.startswith("self."))
    return names


def _held_calls(value: ast.expr) -> list[ast.Call]:
    """The constructor calls a dict or list literal holds (``{"acc": Accuracy(...), "f1": F1Score(...)}``,
    ``nn.ModuleDict({...})``, ``[Accuracy(), ...]``), when it holds nothing else."""
    if isinstance(value, ast.Call) and _terminal(value.func) == "defaultdict" and value.args:
        factory = value.args[0]  # ``defaultdict(SmoothedValue)``: each missing key gets ``SmoothedValue()``
        if isinstance(factory, (ast.Name, ast.Attribute)) and _dotted(factory):
            return [ast.copy_location(ast.Call(func=factory, args=[], keywords=[]), factory)]
        return []
    if isinstance(value, ast.Call) and _terminal(value.func) in ("ModuleDict", "ModuleList", "dict") and value.args:
        value = value.args[0]
    made = value.value if isinstance(value, ast.DictComp) else value.elt if isinstance(value, ast.ListComp) else None
    if isinstance(made, ast.Call) and _dotted(made.func):
        return [made]  # ``{name: DataLoader(...) for name, data in sets.items()}``: every element built by one call
    elts = (
        value.values if isinstance(value, ast.Dict) else value.elts if isinstance(value, (ast.List, ast.Tuple)) else []
    )
    calls = [e for e in elts if isinstance(e, ast.Call) and _dotted(e.func)]
    return calls if calls and len(calls) == len(elts) else []


#: Rooted collectives that, on gloo, hold some ranks only (the ops table: not in EVERY_RANK_ON_GLOO): a broadcast
#: or scatter holds the others until the root has sent; a reduce or gather holds the root until the others have.
_ROOT_SENDS = frozenset({"broadcast", "broadcast_object_list", "scatter"})
_ROOT_RECEIVES = frozenset({"reduce", "gather"})


def _literal_root(call: ast.Call, name: str) -> int | None:
    """The root of a rooted collective that holds only some ranks, when given as a literal (``src=0``)."""
    if name not in _ROOT_SENDS | _ROOT_RECEIVES:
        return None
    keyword = "src" if name in _ROOT_SENDS else "dst"
    value = next((k.value for k in call.keywords if k.arg == keyword), None)
    if value is None and len(call.args) > 1:
        value = call.args[1]
    if isinstance(value, ast.Constant) and type(value.value) is int:
        return value.value
    return None


def _written_by(ctx: tuple[str, ...], root: int, name: str) -> bool:
    """Whether a write under the conditions ``ctx`` is ordered before the other ranks' reads by a rooted call of
    ``name`` with ``root``: a root that sends orders its own writes (``rank == 0`` with ``src=0``); a root that
    receives orders the others' (any write not under ``rank == root``)."""
    mine = _names_rank(ctx, root)
    return mine if name in _ROOT_SENDS else not mine


def _names_rank(ctx: tuple[str, ...], root: int) -> bool:
    """Whether one of the conditions ``ctx`` holds on rank ``root`` only or among a few (``rank == 0``,
    ``rank in (0, 1)``), by text."""
    return any(re.search(rf"(==|\bin\b)\s*\(?\s*{root}\b", c) or re.search(rf"\b{root}\s*==", c) for c in ctx)


#: The last call of a chain that is a barrier: inside a main-process-first block it meets the others' barrier.
_BARRIER_LIKE = re.compile(r"barrier|wait_for_everyone|synchronize")


def _main_first(expr: ast.expr) -> bool:
    """Whether a ``with`` item is a main-process-first context manager (Accelerate's or transformers'
    ``main_process_first()``, ``local_main_process_first()``): the main process runs the block first, the others
    wait in a barrier until it is done."""
    return isinstance(expr, ast.Call) and _terminal(expr.func) in ("main_process_first", "local_main_process_first")


def _or_terms(test: ast.expr) -> list[ast.expr]:
    """The terms of an ``or`` (any one true makes the test true), or the test itself."""
    return test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or) else [test]


def _flag_test(test: ast.expr, flags: set[str]) -> bool:
    """Whether ``test`` is true when one of ``flags`` is set: the flag itself, or the flag compared with
    ``>= 1``/``> 0``/``!= 0``."""
    if isinstance(test, ast.Name):
        return test.id in flags
    if (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id in flags
        and len(test.ops) == 1
        and isinstance(test.comparators[0], ast.Constant)
    ):
        op, value = test.ops[0], test.comparators[0].value
        return (isinstance(op, ast.GtE) and value == 1) or (
            isinstance(op, (ast.Gt, ast.NotEq)) and value in (0, False, None)
        )
    return False


def _leaves_loop(stmts: list[ast.stmt]) -> bool:
    """Whether a block leaves the loop around it or skips the rest of its body (``break``, ``continue``,
    ``return``), not counting what nested loops do. A ``raise`` on a rank's own data (a NaN loss) ends the job
    rather than desynchronising it, and is left alone, as lint leaves data-dependent raises alone elsewhere."""
    for stmt in stmts:
        if isinstance(stmt, (ast.Break, ast.Continue, ast.Return)):
            return True
        if isinstance(stmt, (ast.If, ast.With, ast.AsyncWith, ast.Try)):
            kept = stmt.__dict__.get("_barrierlab_leaves")  # once per statement: an `elif` chain asks each case
            if kept is None:  # for its tail (quadratic in the cases, attack30 a10)
                parts = [getattr(stmt, "body", []), getattr(stmt, "orelse", []), getattr(stmt, "finalbody", [])]
                parts += [h.body for h in getattr(stmt, "handlers", [])]
                kept = stmt._barrierlab_leaves = any(_leaves_loop(part) for part in parts)  # type: ignore[union-attr]
            if kept:
                return True
    return False


def _sized_of(node: ast.AST) -> ast.expr | None:
    """``x`` of ``len(x)``, ``x.shape[0]`` and ``x.size(0)``: the length of its first dimension."""
    if isinstance(node, ast.Call) and _terminal(node.func) == "len" and len(node.args) == 1 and not node.keywords:
        return node.args[0]
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "shape"
        and _const_ints(node.slice) == (0,)
    ):
        return node.value.value
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "size"
        and len(node.args) == 1
        and _const_ints(node.args[0]) == (0,)
    ):
        return node.func.value
    return None


def _const_ints(node: ast.AST) -> tuple[int, ...] | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return (node.value,)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _const_ints(node.operand)
        return (-inner[0],) if inner and len(inner) == 1 else None
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        values = [_const_ints(e) for e in node.elts]
        if all(v is not None and len(v) == 1 for v in values):
            return tuple(v[0] for v in values)  # type: ignore[index]
    return None


_FLIP = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE, ast.Eq: ast.Eq, ast.NotEq: ast.NotEq}
_COMPARE: dict[type, Callable[[int, Any], bool]] = {
    ast.Eq: lambda v, c: v == c[0],
    ast.NotEq: lambda v, c: v != c[0],
    ast.Lt: lambda v, c: v < c[0],
    ast.LtE: lambda v, c: v <= c[0],
    ast.Gt: lambda v, c: v > c[0],
    ast.GtE: lambda v, c: v >= c[0],
    ast.In: lambda v, c: v in c,
    ast.NotIn: lambda v, c: v not in c,
}
_NEGATE = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.Lt: ast.GtE,
    ast.GtE: ast.Lt,
    ast.Gt: ast.LtE,
    ast.LtE: ast.Gt,
}


def _int_compare(test: ast.AST) -> tuple[ast.expr, type, tuple[int, ...]] | None:
    """``expr OP constant`` (either side) as (expr, op type, constants)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    op, left, right = type(test.ops[0]), test.left, test.comparators[0]
    if op not in _COMPARE:
        return None
    consts = _const_ints(right)
    if consts is not None and _const_ints(left) is None:
        membership = op in (ast.In, ast.NotIn)
        return (left, op, consts) if membership == isinstance(right, (ast.Tuple, ast.List, ast.Set)) else None
    consts = _const_ints(left)
    if consts is not None and len(consts) == 1 and op in _FLIP and _const_ints(right) is None:
        return (right, _FLIP[op], consts)
    return None


def _sentinel_test(test: ast.AST) -> bool:
    """``rank == -1``, ``local_rank != -1``, ``rank < 0``, ``rank in (-1,)``: a rank compared only with what no
    rank is (-1 is the "not distributed" sentinel of YOLOv5, transformers and many scripts). The answer is the
    same on every rank — false everywhere when the value is a real rank, true everywhere when it is the sentinel
    itself (a helper's ``rank=-1`` default) — so the test does not make a value rank-dependent (round 19's
    ``sampler = None if rank == -1 else DistributedSampler(dataset)``). Only a rank name itself, or the rank read
    from the environment (``int(os.environ.get("RANK", -1)) != -1``, nanoGPT's ``ddp`` flag: attack23 a06), not
    an expression made from one (``rank - 1 == -1`` is true on rank 0)."""
    found = _int_compare(test)
    if found is None:
        return False
    value, op, consts = found
    if isinstance(value, ast.Call) and _terminal(value.func) == "int" and len(value.args) == 1:
        value = value.args[0]  # nanoGPT's ``int(os.environ.get("RANK", -1)) != -1``: is this a distributed run?
    if (
        not (isinstance(value, ast.Name) and _rank_name(value.id))
        and not (isinstance(value, ast.Attribute) and _rank_name(value.attr))
        and not _env_rank(value)
    ):
        return False
    if op in (ast.In, ast.NotIn, ast.Eq, ast.NotEq, ast.LtE, ast.Gt):
        return all(c < 0 for c in consts)
    return op in (ast.Lt, ast.GtE) and all(c <= 0 for c in consts)


# --------------------------------------------------------------------------- analysis


# ``module.register_forward_hook(fn)``, ``tensor.register_hook(fn)``, ``optimizer.register_step_post_hook(fn)``,
# ``ddp_model.register_comm_hook(state, fn)``: the function runs later, each time the hooked event happens, on the
# ranks that registered it. Group 1 is the event.
_HOOK_REGISTRATION = re.compile(r"register_(?:module_)?(\w*?)_?hook")
#: A module's hooks run by its ``load_state_dict``/``state_dict``: the method that registers one -> that method.
_MODULE_HOOKS = {
    "register_load_state_dict_pre_hook": "load_state_dict",
    "_register_load_state_dict_pre_hook": "load_state_dict",
    "register_load_state_dict_post_hook": "load_state_dict",
    "register_state_dict_pre_hook": "state_dict",
    "register_state_dict_post_hook": "state_dict",
    "_register_state_dict_hook": "state_dict",
}
#: Calls that register an object for later use: a callback list's ``append``, a trainer's ``add_callback``.
_CALLBACK_REGISTRATION = re.compile(r"append|insert|add|add_callback|register_callback|add_handler|add_hook")
#: torch's DDP communication hooks (torch/distributed/algorithms/ddp_comm_hooks/): each all_reduces (or
#: all_gathers) the gradient bucket it is given.
_COMM_HOOKS = "torch.distributed.algorithms.ddp_comm_hooks"
_TORCH_COMM_HOOKS = frozenset(
    {
        "allreduce_hook",
        "fp16_compress_hook",
        "bf16_compress_hook",
        "powerSGD_hook",
        "batched_powerSGD_hook",
        "quantization_pertensor_hook",
        "quantization_perchannel_hook",
    }
)
_HOOK_MOMENTS = {
    "forward": "forward of the module",
    "forward_pre": "forward of the module",
    "full_backward": "backward through the module",
    "full_backward_pre": "backward through the module",
    "backward": "backward through the module",
    "": "backward through the tensor",
    "post_accumulate_grad": "backward through the tensor",
    "step_pre": "optimizer step",
    "step_post": "optimizer step",
    "comm": "backward (DDP runs it for each gradient bucket)",
}


class _PrefixTaint:
    """What :meth:`_Analysis.taint_before` works out for a function, for every line at once: one sweep of the
    function's own nodes in line order, growing the taint with a worklist as each line's nodes join, and
    noting the line at which each name joins (a rank ``elif`` dispatch of n cases inside a function took n
    recomputations of the whole taint: quadratic). The taint before a line is not quite monotone in the line:
    ``_controlled`` counts a mutating call (``out.append(x)``) under a rank test when its receiver is a list,
    dict or set assigned before the line, or when the call itself is at or after the line. So two sweeps bound
    it: ``every_call`` False counts the first kind only (a subset of the taint at every line), True every such
    call (a superset); :meth:`_Analysis.rank_before` recomputes the exact taint only when the two disagree
    about a test."""

    def __init__(self, an: _Analysis, func: _Func, every_call: bool) -> None:
        self.an, self.every_call = an, every_call
        self.laundered = an.laundered.get(func.key)
        self.lam: set[str] = set(an.func_inherited[func.key])  # the taint with the implicit flow of the ifs
        self.omega: set[str] = set(self.lam)  # ... and with the counters of progress bars it disables
        self.joined: dict[str, int] = {}  # name -> the line of the nodes that brought it in (absent: inherited)
        self.pairs: list[tuple[list[str], ast.expr, int | None]] = []
        self.controls: list[ast.If | ast.While] = []
        self.bars: list[int] = []  # pairs whose value is a progress bar (see _rank_bar)
        self.readers: dict[str, list[tuple[str, int]]] = {}
        self.covered: set[int] = set()  # ifs and whiles whose branches' changes are in the taint
        self.counted: set[int] = set()  # progress bars whose counters are in it
        self.containers: set[str] = set()
        self.pending: dict[str, list[list[str]]] = {}  # container-to-be -> what its mutating calls change
        self.queue: list[tuple[str, int]] = []
        self.omega_queue: list[int] = []
        self.line = -1
        nodes = [n for n in _own_nodes(func.node.body) if isinstance(getattr(n, "lineno", None), int)]
        nodes.sort(key=lambda n: n.lineno)  # type: ignore[attr-defined]
        for line, group in itertools.groupby(nodes, key=lambda n: n.lineno):  # type: ignore[attr-defined]
            self.line = line
            for node in group:
                self._add(node)
            self._settle()

    def holds(self, test: ast.expr, line: int) -> set[str]:
        """The names ``test`` reads that are in the taint from the statements before ``line``."""
        out = set()
        for node in ast.walk(test):
            name = node.id if isinstance(node, ast.Name) else _dotted(node) if isinstance(node, ast.Attribute) else None
            if name and name in self.omega and self.joined.get(name, line - 1) < line:
                out.add(name)
        return out

    def _read(self, expr: ast.AST, kind: str, index: int) -> None:
        for node in ast.walk(expr):
            name = node.id if isinstance(node, ast.Name) else _dotted(node) if isinstance(node, ast.Attribute) else None
            if name:
                self.readers.setdefault(name, []).append((kind, index))

    def _add(self, node: ast.AST) -> None:
        an = self.an
        for pair in _assignments([node]) + _loop_targets([node]):
            index = len(self.pairs)
            self.pairs.append(pair)
            self._read(pair[1], "pair", index)
            self.queue.append(("pair", index))
            self.omega_queue.append(index)
            value = pair[1]
            if pair[2] is None and isinstance(value, ast.Call) and _terminal(value.func) in _PROGRESS_BARS:
                self.bars.append(index)
                self._read(value, "bar", index)
                self.queue.append(("bar", index))
        if not self.every_call:
            for name in _containers([node]) - self.containers:
                self.containers.add(name)
                for names in self.pending.pop(name, ()):
                    for changed in names:
                        self._join(changed)
        flags = _handler_names([node])
        an.handler_flags |= flags
        for name in flags | an._signal_reads([node]):
            self._join(name)
        if isinstance(node, (ast.If, ast.While)):
            index = len(self.controls)
            self.controls.append(node)
            self._read(node.test, "control", index)
            self.queue.append(("control", index))

    def _join(self, name: str) -> None:
        if name in self.lam:
            return
        self.lam.add(name)
        self.queue.extend(self.readers.get(name, ()))
        self._join_omega(name)

    def _join_omega(self, name: str) -> None:
        if name in self.omega:
            return
        self.omega.add(name)
        self.joined[name] = self.line
        self.omega_queue.extend(i for kind, i in self.readers.get(name, ()) if kind == "pair")

    def _settle(self) -> None:
        an, queue = self.an, self.queue
        while queue:
            kind, index = queue.pop()
            if kind == "pair":
                targets, value, position = self.pairs[index]
                if not set(targets) <= self.lam and an._value_rank(value, position, self.lam, self.laundered):
                    for name in targets:
                        self._join(name)
            elif kind == "control":
                node = self.controls[index]
                if id(node) not in self.covered and an.mentions_rank(node.test, self.lam, self.laundered, files=False):
                    self._cover(node)
            elif index not in self.counted:
                targets, value, _ = self.pairs[index]
                if an._rank_bar(value, self.lam, self.laundered):
                    self.counted.add(index)
                    for name in (f"{target}.{counter}" for target in targets for counter in _BAR_COUNTERS):
                        self._join_omega(name)
        while self.omega_queue:
            targets, value, position = self.pairs[self.omega_queue.pop()]
            if not set(targets) <= self.omega and an._value_rank(value, position, self.omega, self.laundered):
                for name in targets:
                    self._join_omega(name)

    def _cover(self, node: ast.If | ast.While) -> None:
        """Join what ``node``'s branches change (as :func:`_controlled` finds it), once per branch: an if or
        while inside it that is covered already adds only its test."""
        self.covered.add(id(node))
        stack: list[ast.AST] = [*node.body, *node.orelse]
        while stack:
            inner = stack.pop()
            if isinstance(inner, (ast.If, ast.While)):
                stack.append(inner.test)
                if id(inner) not in self.covered:
                    self.covered.add(id(inner))
                    stack += [*inner.body, *inner.orelse]
                continue
            if isinstance(inner, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                for target in inner.targets if isinstance(inner, ast.Assign) else [inner.target]:
                    while isinstance(target, ast.Subscript):
                        target = target.value
                    for name in _target_names(target):
                        self._join(name)
            elif isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and inner.func.attr in _MUTATORS:
                names = [n for n in _target_names(inner.func.value) if n.partition(".")[0] not in self.an.modules]
                receiver = _dotted(inner.func.value)
                if self.every_call or receiver in self.containers:
                    for name in names:
                        self._join(name)
                elif receiver is not None and names:
                    self.pending.setdefault(receiver, []).append(names)
            if not isinstance(inner, _SCOPES):
                stack.extend(c for c in ast.iter_child_nodes(inner) if not isinstance(c, _SCOPES))


class _Found(dict):
    """The findings of an analysis by the id of their call: (kind, finding). ``recorded`` counts the findings
    ever recorded, withdrawn ones too (see :meth:`_Analysis.retract`)."""

    recorded = 0
    #: the findings ever withdrawn: a ``_found_at`` mark on an item (:meth:`_Walker._unflagged`) holds until then
    removed = 0

    def __setitem__(self, key: int, value: tuple[str, Finding]) -> None:
        self.recorded += 1
        super().__setitem__(key, value)

    def __delitem__(self, key: int) -> None:
        self.removed += 1
        super().__delitem__(key)

    def pop(self, *args: Any) -> Any:
        self.removed += 1
        return super().pop(*args)


class _Analysis:
    """Whole-module facts (imports, functions, taint, call graph) and the findings."""

    def __init__(self, path: str, units: list[_Unit], module: str | None = None) -> None:
        self.path = path
        self.units = units
        self.module = module
        self.funcs: list[_Func] = []
        self._off_alone: dict[str, bool] = {}  # turned_off_by_constants of a call handing no constants, per callee
        self.table: dict[str, _Func] = {}
        self.found: _Found = _Found()
        self.rank_funcs: set[str] = set()
        #: while True, a look at a file counts as rank-dependent only when the program changes that file
        #: (:meth:`_prepare_looks`): the taint a raise's test is read with (:meth:`_prepare_strict_taint`)
        self.strict_looks = False
        self.changing_looks: set[int] = set()
        #: looks at a file whose every change the program orders between two collectives (:func:`_fenced_look`)
        self.fenced_looks: set[int] = set()
        self.strict_taint: dict[str, set[str]] = {}
        self.strict_rank_funcs: set[str] = set()
        self.module_taint: set[str] = set()
        self.func_taint: dict[str, set[str]] = {}
        #: what each function's taint started from (the module's, its class's attributes, its parent's): to
        #: recompute it from the statements before a line (:meth:`taint_before`)
        self.func_inherited: dict[str, set[str]] = {}
        #: (function, strict looks) -> its two :class:`_PrefixTaint` sweeps, made by :meth:`rank_before`
        self._prefix_taints: dict[tuple[str, bool], dict[bool, _PrefixTaint]] = {}
        self.reach: dict[str, tuple[str, str | None]] = {}  # function -> (its call, the function it calls)
        self._module_hooks: dict[tuple[str, str], str] | None = None  # (class, method) -> its load/state_dict hook
        self.reach_notes: dict[str, str] = {}
        self.bases: dict[str, list[str]] = {}
        self.contexts: dict[int, frozenset[str]] = {}
        self.no_sync_blocks: dict[int, ast.AST] = {}  # a call inside ``with model.no_sync():`` -> that block
        self.ddp: dict[str | None, dict[str, str]] = {}
        self.ddp_values: dict[str | None, set[str]] = {}
        self.laundered: dict[str | None, dict[str, int]] = {}
        self.same_result_calls: set[int] = set()
        self._inert_cache: dict[str, frozenset] = {}
        self._agreeing: dict[str, bool] = {}  # function key -> whether every return hands back an agreed value
        self.uneven_batches = _uneven_batches(units)  # the line of an ``even_batches=False``, if any
        self.tuple_ranks: dict[str, tuple[bool, ...]] = {}
        #: function name -> (its parameters, for each element of the tuples it returns the parameters that flow
        #: into it), worked out when first asked (None while it is: a function reaching itself)
        self._tuple_flows: dict[str, tuple[list[str], tuple[frozenset[str], ...]] | None] = {}
        self.values: dict[str | None, dict[str, ast.expr]] = {}
        self.objects: dict[str | None, dict[str, _Built]] = {}
        self.base_names: dict[str, list[str]] = {}  # class of the file -> its bases' dotted names (imports)
        self.class_nodes: dict[str, tuple[ast.ClassDef, _Unit]] = {}
        self.list_states: dict[str, list[tuple[str, int]]] = {}  # metric class of the file -> (state, line)
        self.raisers: dict[str, str] = {}  # function -> where its raise is ("line 14", "line 3 of helpers")
        self._exits_cache: dict[str, bool] = {}  # function -> whether it can end the process (exits_process)
        self.gates: dict[str, bool] = {}
        self._gates_of: dict[str, tuple[str, int | None, ast.expr | None] | None] = {}
        self._parent_maps: dict[int, dict[int, ast.AST]] = {}
        self._rank_only_calls: dict[str, bool] = {}
        self._no_grad_calls: dict[str, bool] = {}
        self._return_classes: dict[str, str | None] = {}  # function -> the class of the file its objects are of
        self._stored: dict[str, list[tuple[_Func, ast.Call]]] | None = None
        self.passed: dict[tuple[str, str], str] = {}
        self.rng_seeder: str | None = None  # the call that seeds a global random state per rank
        self.modules = frozenset(n for u in units for n in _imports([u.tree]))  # imported names (os, np...)
        self.rank_returns: set[str] = set()  # keys of functions whose result differs between ranks
        self.rank_raisers: dict[str, tuple[str, ast.AST]] = {}  # function -> (rank test, raise) it raises under
        self.param_raisers: dict[str, tuple[frozenset[str], str]] = {}  # function -> (parameters, test) of a raise
        self.kept: dict[tuple[str, str], str] = {}
        self.followed = any(u.prefix for u in units)
        self.has_buffers = any(_BUFFERS.search(u.source) for u in units)
        self.world_size = _world_size(units)
        self._calls_by_name: dict[str, list[ast.Call]] | None = None
        self._constant_params_cache: dict[str, frozenset[str]] = {}
        self.local_funcs: set[str] = set()
        self._property_calls: dict[int, ast.Call | None] = {}
        self._dunder_calls: dict[tuple[int, tuple[str, ...]], ast.Call | None] = {}
        self._implicit: dict[int, _Call] = {}  # id of a call made by dunder_calls -> the method it runs
        self._cached_reads: set[int] = set()  # reads of a cached_property read before in the same function
        self.rank_params: dict[
            str, set[str]
        ] = {}  # function -> parameters some call hands a rank-dependent value  # functions that return a rank's own model output
        self.handler_flags: set[str] = set()  # status flags set in except handlers (see _handler_names)
        self._data_gates: dict[str, tuple[frozenset[str], str, str, str] | None] = {}
        self._loop_gates: dict[str, tuple[ast.For, str, str] | None] = {}  # see loop_gate
        self._count_spent = 0  # steps the share counter took in this file (see _Walker._trip_counts)
        self._gate_tests: dict[str, ast.expr] = {}  # function -> the test of its data_gate
        self.local_notes: dict[str, str] = {}  # test on a rank's own model output -> where that output comes from
        #: a callee's test on a parameter -> (the argument, the callee, the parameter, the call's line) of a call
        #: that hands it this rank's own share of the data (see _Walker._fed_rank_share)
        self.share_notes: dict[str, tuple[str, str, str, int]] = {}
        self.local_returns: set[str] = set()  # those tests that return from a function outside any loop
        self._constant_attrs: dict[str, dict[str, set[object]]] = {}
        self.frameworks: dict[str, list[FrameworkCollective]] = {}
        for entry in FRAMEWORK_COLLECTIVES:
            self.frameworks.setdefault(entry.name, []).append(entry)

    def run(self) -> list[Finding]:
        for unit in self.units:
            self._collect_functions(unit)
            self._mark_contexts(unit)
        self._prepare_looks()
        self._expand_namespace()
        self._prepare_ddp()
        self._prepare_objects()
        self._ddp_through_objects()
        self._prepare_callbacks()
        self._seed_gated_returns()  # lintrecall32b
        self._prepare_laundering()
        self._prepare_values()
        self._prepare_taint()
        self._prepare_strict_taint()
        self._prepare_reach()
        self._prepare_raisers()
        self._prepare_local_funcs()
        for unit in self.units:
            if unit.report:
                _Walker(self, unit, self.module_taint, None, None).block(unit.tree.body, "return")
        for func in self.funcs:
            if func.unit.report:
                self._walk_function(func)
        for unit in self.units:
            if unit.report:
                _Order(self, unit, self.module_taint, None, None).block(unit.tree.body, ())
        for func in self.funcs:
            if func.unit.report:
                _Order(self, func.unit, self.func_taint[func.key], func.self_class, func.key).block(func.node.body, ())
        _Sizes(self).run()
        _Agreement(self).run()
        _Retries(self).run()
        _StoreKeys(self).run()
        _DetachedLosses(self).run()
        _SharedMakes(self).run()
        _GroupArguments(self).run()
        _BranchPairs(self).run()
        _StoreUnset(self).run()
        _ReusedStoreBarrier(self).run()
        _RankUnbound(self).run()
        _PointToPoint(self).run()
        _Forked(self).run()
        _JoinShadows(self).run()
        _RingPeers(self).run()  # lintrecall32
        _AgreedArguments(self).run()  # lintrecall32b
        _DivergedModule(self).run()  # lintrecall32b
        _CommHookGate(self).run()  # lintrecall32b
        _UnfrozenAfterWrap(self).run()  # lintrecall32b
        _SharedCheckpointKey(self).run()  # lintrecall32b
        findings = [f for _, f in self.found.values()]
        return sorted(findings, key=lambda f: (f.cell or 0, f.line, f.col, f.collective))

    # -- looks at files

    def _prepare_looks(self) -> None:
        """The looks at a file (:func:`_file_check`) whose answer can differ between ranks: a look every rank makes
        of the same path is not rank-dependent by itself (round38's correct llm-compressor item: every rank asks
        `os.path.isfile` of a shard nobody writes). It is when the program changes that file while the ranks
        run: the branch the look decides passes the path on (``if not os.path.isfile(p): make(p)``, the first
        rank there makes it), or the program writes, removes or creates a path with the same name (matched by
        text: the whole path, its last component, ``get_path(name)`` calls whatever their receiver, one local
        assignment followed), directly or through a function of the file that writes its parameter. A path
        that differs between ranks counts through its own text (:meth:`mentions_rank` reads the arguments)."""
        scopes: list[tuple[_Unit, list[ast.AST], str, list[str]]] = []  # (unit, body, function, parameters)
        for unit in self.units:
            scopes.append((unit, list(unit.tree.body), "", []))
            scopes += [
                (unit, list(n.body), n.name, [a.arg for a in (*n.args.posonlyargs, *n.args.args, *n.args.kwonlyargs)])
                for n in ast.walk(unit.tree)
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            ]
        #: (function name, parameter) -> the arguments the file's calls hand it: a path built from a parameter
        #: is matched by what the callers pass too
        handed: dict[tuple[str, str], list[ast.expr]] = {}
        params_of = {
            n.name: [a.arg for a in (*n.args.posonlyargs, *n.args.args)]
            for unit in self.units
            for n in ast.walk(unit.tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        }
        for unit in self.units:
            for call in (n for n in ast.walk(unit.tree) if isinstance(n, ast.Call)):
                name = _terminal(call.func) or ""
                if name not in params_of:
                    continue
                params = params_of[name]
                offset = 1 if params[:1] in (["self"], ["cls"]) and isinstance(call.func, ast.Attribute) else 0
                for i, arg in enumerate(call.args):
                    if i + offset < len(params):
                        handed.setdefault((name, params[i + offset]), []).append(arg)
                for keyword in call.keywords:
                    if keyword.arg:
                        handed.setdefault((name, keyword.arg), []).append(keyword.value)
        writers: dict[str, set[int]] = {}  # function of the file -> positions of the parameters it writes
        for unit in self.units:
            for func in (n for n in ast.walk(unit.tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
                params = [a.arg for a in (*func.args.posonlyargs, *func.args.args)]
                offset = 1 if params[:1] in (["self"], ["cls"]) else 0
                for node in _own_nodes(func.body):
                    if isinstance(node, ast.Call):
                        for path in self._changed_paths(node, unit):
                            if isinstance(path, ast.Name) and path.id in params[offset:]:
                                writers.setdefault(func.name, set()).add(params.index(path.id) - offset)
        changed: set[str] = set()
        looks: list[tuple[ast.Call, set[str]]] = []
        #: each change: the call, the keys of its path, and, for a write of a function of the file to its own
        #: parameter (made where that function is called, which counts as a change too), that function's name
        changes: list[tuple[ast.Call, set[str], str | None]] = []
        tests: dict[int, tuple[ast.If, set[str]]] = {}  # a look in an if's test -> that if, the keys of its path
        for unit, body, owner, params in scopes:
            assigns: dict[str, list[ast.expr]] = {}
            nodes = list(_own_nodes(body))
            for param in params:
                assigns[param] = list(handed.get((owner, param), ()))
            for node in nodes:
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    assigns.setdefault(node.targets[0].id, []).append(node.value)
            for node in nodes:
                if not isinstance(node, ast.Call):
                    continue
                paths = self._changed_paths(node, unit)
                paths += [node.args[i] for i in writers.get(_terminal(node.func) or "", ()) if i < len(node.args)]
                for path in paths:
                    keys = _path_keys(path, assigns)
                    changed |= keys
                    own = isinstance(path, ast.Name) and path.id in params and owner in writers
                    changes.append((node, keys, owner if own else None))
                looked = _looked_at(node)
                if looked is not None:
                    looks.append((node, _path_keys(looked, assigns)))
            for node in nodes:  # the branch a look decides passes the path on: check, then make
                test = node.test if isinstance(node, (ast.If, ast.While, ast.IfExp)) else None
                if test is None:
                    continue
                tested = [
                    (look, looked)
                    for look in ast.walk(test)
                    if isinstance(look, ast.Call) and (looked := _looked_at(look)) is not None
                ]
                if not tested:  # the branches are read only for a test that looks (attack30 a10: a 400-case
                    continue  # `elif` dispatch read each case's tail, quadratic in the cases)
                branches = [node.body, node.orelse] if isinstance(node, ast.IfExp) else [*node.body, *node.orelse]
                used = {
                    ast.unparse(arg)
                    for call in _own_nodes(branches)
                    if isinstance(call, ast.Call)
                    for arg in (*call.args, *(k.value for k in call.keywords))
                }
                for look, looked in tested:
                    if ast.unparse(looked) in used:
                        self.changing_looks.add(id(look))
                    if isinstance(node, ast.If):
                        tests[id(look)] = (node, _path_keys(looked, assigns))
        self.changing_looks |= {id(node) for node, keys in looks if keys & changed}
        if not tests:
            return
        # a writer of the file's called only by name counts where it is called; one handed on as a value (a
        # callback: `distributed_function(1, write_file, path)`) counts where it writes
        named: collections.Counter[str] = collections.Counter()
        if writers:
            for unit in self.units:
                for n in ast.walk(unit.tree):
                    if isinstance(n, ast.Call) and _terminal(n.func) in writers:
                        named[_terminal(n.func)] -= 1
                    elif isinstance(n, (ast.Name, ast.Attribute)) and isinstance(n.ctx, ast.Load):
                        if _terminal(n) in writers:
                            named[_terminal(n)] += 1
        fenced_changes = [(c, k, owner is not None and named[owner] <= 0) for c, k, owner in changes]
        for node, keys in looks:
            if id(node) in tests and _fenced_look(tests[id(node)][0], node, keys, fenced_changes, writers, params_of):
                self.fenced_looks.add(id(node))

    def _strictly(self, work: Callable[..., Any], *args: Any) -> Any:
        """``work(*args)`` with looks counted as :meth:`_prepare_strict_taint` counts them."""
        kept = self.rank_funcs
        self.rank_funcs, self.strict_looks = self.strict_rank_funcs, True
        try:
            return work(*args)
        finally:
            self.rank_funcs, self.strict_looks = kept, False

    def _counted_look(self, node: ast.AST) -> bool:
        if id(node) in self.fenced_looks:
            return False
        return _file_check(node) and (not self.strict_looks or id(node) in self.changing_looks)

    #: What the taint pass works out; :meth:`_prepare_strict_taint` runs it a second time and puts these back.
    _TAINT_STATE = (
        "rank_funcs",
        "rank_returns",
        "module_taint",
        "func_taint",
        "func_inherited",
        "tuple_ranks",
        "rng_seeder",
        "_tuple_flows",
        "_inert_cache",
    )

    def _prepare_strict_taint(self) -> None:
        """The taint and the functions whose result differs between ranks, with a look at a file counted only when
        the program changes that file: what a ``raise``'s test is read with. A look tested by the raise itself
        (``if not os.path.exists(p): raise``) is a precondition, as an assert states it (files=False), and so is
        one handed back by a helper every rank calls (round38's correct llm-compressor item:
        ``try_to_load_from_cache`` returns the shard's path if ``os.path.isfile`` finds it, else None, and
        ``from_pretrained`` raises on None: every rank looks up the same shard, which nobody writes)."""
        kept = {name: getattr(self, name) for name in self._TAINT_STATE}
        if not any(_FILE_CHECK_TEXT.search(u.source) for u in self.units):
            self.strict_taint, self.strict_rank_funcs = self.func_taint, self.rank_funcs
            return
        self.rank_funcs, self.rank_returns, self.module_taint = set(), set(), set()
        self.func_taint, self.func_inherited, self.tuple_ranks = {}, {}, {}
        self._tuple_flows, self._inert_cache = {}, {}  # worked out from rank-dependence: not shared between the two
        self.strict_looks = True
        try:
            self._prepare_taint()
            self.strict_taint, self.strict_rank_funcs = self.func_taint, self.rank_funcs
        finally:
            self.strict_looks = False
            for name, value in kept.items():
                setattr(self, name, value)

    def _changed_paths(self, call: ast.Call, unit: _Unit) -> list[ast.expr]:
        """The paths a call writes, removes or creates (as expressions)."""
        full = self._resolve(call.func, unit) if _dotted(call.func) else ""
        if _written_path(call, full) is None and _removed_path(call, full) is None and _made_folder(call, full) is None:
            return []
        if isinstance(call.func, ast.Attribute) and call.func.attr in ("write_text", "write_bytes", "unlink", "mkdir"):
            return [call.func.value]
        index, names = (1, ("f", "dst")) if full in ("torch.save", "os.replace", "os.rename") else (0, ("file", "path"))
        if full.startswith("shutil.") and full != "shutil.rmtree":
            index, names = 1, ("dst",)
        path = _argument(call, index, *names)
        return [path] if path is not None else []

    # -- functions and call graph

    def _collect_functions(self, unit: _Unit) -> None:
        def visit(node: ast.AST, owner: str | None, self_class: str | None, parent: str | None) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    key = f"{owner}.{child.name}" if owner else child.name
                    func = _Func(key, child, unit, self_class, parent)
                    self.funcs.append(func)
                    self.table[key] = func
                    visit(child, None, self_class, key)
                elif isinstance(child, ast.ClassDef):
                    cls = f"{owner}.{child.name}" if owner and owner == unit.prefix else child.name
                    self.bases[cls] = [_terminal(b) for b in child.bases if _terminal(b)]
                    self.base_names[cls] = [self._resolve(b, unit) for b in child.bases if _dotted(b)]
                    self.class_nodes[cls] = (child, unit)
                    visit(child, cls, cls, parent)
                else:
                    visit(child, owner, self_class, parent)

        visit(unit.tree, unit.prefix, None, None)

    def _mark_contexts(self, unit: _Unit) -> None:
        """Remember, for every call, the ``with`` blocks and decorators it runs under that change what DDP
        issues: no_grad/inference_mode, Join (shadows the collectives of finished ranks), no_sync."""

        def kinds(expr: ast.expr) -> set[str]:
            name = _terminal(expr.func if isinstance(expr, ast.Call) else expr)
            if name in _NO_GRAD:
                return {"no_grad"}
            if name in _JOIN:
                return {"join"}
            return {"no_sync"} if name == "no_sync" else set()

        blocks: list[ast.AST] = []  # the no_sync() blocks the visit is inside, innermost last

        def visit(node: ast.AST, ctx: frozenset[str]) -> None:
            if isinstance(node, ast.Call):
                self.contexts[id(node)] = ctx
                if blocks:
                    self.no_sync_blocks[id(node)] = blocks[-1]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for deco in node.decorator_list:
                    visit(deco, ctx)
                inner = frozenset(k for deco in node.decorator_list for k in kinds(deco))
                for stmt in node.body:
                    visit(stmt, inner)
                return
            if isinstance(node, (ast.With, ast.AsyncWith)):
                added = {k for item in node.items for k in kinds(item.context_expr)}
                inner = ctx | added
                for item in node.items:
                    visit(item, ctx)
                if "no_sync" in added:
                    blocks.append(node)
                for stmt in node.body:
                    visit(stmt, frozenset(inner))
                if "no_sync" in added:
                    blocks.pop()
                return
            for child in ast.iter_child_nodes(node):
                visit(child, frozenset() if isinstance(child, ast.Lambda) else ctx)

        visit(unit.tree, frozenset())

    def _scopes(self) -> list[tuple[str | None, list[ast.AST], _Unit]]:
        """(scope key, its own nodes, its unit): the module (all units) and every function."""
        module = [n for u in self.units if u.report for n in _own_nodes(u.tree.body)]
        scopes: list[tuple[str | None, list[ast.AST], _Unit]] = [(None, module, self.units[0])] if self.units else []
        return scopes + [(f.key, list(_own_nodes(f.node.body)), f.unit) for f in self.table.values()]

    def _class_of(self, key: str | None) -> str | None:
        return self.table[key].self_class if key in self.table else None

    def constant_attributes(self, cls: str) -> dict[str, set[object]]:
        """``self.`` attributes of class ``cls`` (or its bases in the file) that only ever hold literals: assigned
        once in the file, in ``__init__``, from a literal or from a parameter with a literal default, and every
        construction of the class in the file leaves that parameter at its default or passes a literal (a
        config switch: round 37's MMF loop, ``skip_batch_on_nan_losses=False`` by default and never passed).
        Attribute -> the values it can hold."""
        if cls in self._constant_attrs:
            return self._constant_attrs[cls]
        self._constant_attrs[cls] = found = {}
        stores: dict[str, int] = {}
        for unit in self.units:
            for node in ast.walk(unit.tree):
                targets: list[ast.expr] = []
                if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                    for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                        targets += list(ast.walk(target))
                elif isinstance(node, ast.Call) and _terminal(node.func) in ("setattr", "delattr"):
                    return found  # attributes set by name: nothing is known
                for t in targets:
                    if isinstance(t, ast.Attribute) and isinstance(t.ctx, ast.Store):
                        stores[t.attr] = stores.get(t.attr, 0) + 1
        if any(other != cls and cls in self._ancestors(other) for other in self.class_nodes):
            return found  # a subclass may hand its own values up through super().__init__
        for owner in [cls]:
            init = self.table.get(f"{owner}.__init__")
            if init is None:
                continue
            args = init.node.args
            if args.vararg or args.kwarg:
                continue
            positional = [*args.posonlyargs, *args.args]
            names = [a.arg for a in positional]
            defaults = dict(zip(names[len(names) - len(args.defaults) :], args.defaults))
            defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
            sites = self._call_sites(init.key)
            for names_, value, index in _assignments(
                n for n in _own_nodes(init.node.body) if isinstance(n, ast.Assign)
            ):
                if index is not None or len(names_) != 1 or not names_[0].startswith("self."):
                    continue
                attr = names_[0][5:]
                if "." in attr or stores.get(attr) != 1:
                    continue
                literal = _constant(value)
                if literal is not _NOT_CONSTANT:
                    found[attr] = {literal}
                    continue
                if not isinstance(value, ast.Name) or value.id not in defaults:
                    continue
                default = _constant(defaults[value.id])
                if default is _NOT_CONSTANT:
                    continue
                place = names.index(value.id) - 1 if value.id in names else None
                values: set[object] = set() if sites else {default}
                for call, _scope, _unit in sites:
                    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
                        break
                    given = next((k.value for k in call.keywords if k.arg == value.id), None)
                    if given is None and place is not None and 0 <= place < len(call.args):
                        given = call.args[place]
                    literal = _constant(given) if given is not None else default
                    if literal is _NOT_CONSTANT:
                        break
                    values.add(literal)
                else:
                    found[attr] = values
        return found

    def never_true(self, test: ast.expr, self_class: str | None) -> bool:
        """Whether ``test`` is false for every value the constant ``self.`` attributes it reads can hold (see
        :meth:`constant_attributes`), through ``and``/``or``/``not``: ``if nan_keys and self.skip_batch:``."""
        if self_class is None or "self" not in {n.id for n in ast.walk(test) if isinstance(n, ast.Name)}:
            return False
        known = self.constant_attributes(self_class)
        if not known:
            return False

        def never(node: ast.expr) -> bool:
            if isinstance(node, ast.BoolOp):
                return (any if isinstance(node.op, ast.And) else all)(never(v) for v in node.values)
            attrs = [
                n
                for n in ast.walk(node)
                if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self"
            ]
            if not attrs or any(a.attr not in known for a in attrs):
                return False
            choices = sorted({a.attr for a in attrs})
            if len(choices) > 2 or any(len(known[a]) > 4 for a in choices):
                return False
            renamed = _RenameSelf().visit(copy.deepcopy(node))
            combos: list[dict[str, object]] = [{}]
            for attr in choices:
                combos = [{**c, f"self__{attr}": v} for c in combos for v in known[attr]]
            return all(_false_with(renamed, combo) for combo in combos)

        return never(test)

    def _sampler_class(self, name: str | None) -> bool:
        """Whether ``name`` is a class of the file derived from ``DistributedSampler``: like it, it takes the
        rank to pick each rank's share, the same number of items on every rank (its arguments place data)."""
        return bool(name) and name in self.bases and any(a in _DATA_ONLY_CALLS for a in self._ancestors(name)[1:])

    def _ancestors(self, cls: str) -> list[str]:
        """``cls`` and its base classes, by name, following the classes of this file (cycles stop)."""
        order: list[str] = []
        queue = [cls]
        while queue:
            name = queue.pop(0)
            if name not in order:
                order.append(name)
                queue += self.bases.get(name, [])
        return order

    def _wrapper_kind(self, call: ast.Call, unit: _Unit) -> str | None:
        """``ddp``/``fsdp`` when ``call`` wraps a model so that its forward and backward are collective."""
        term = self._resolve(call.func, unit).rpartition(".")[2]
        if term in ("DistributedDataParallel", "DDP"):
            return "ddp"
        if term in ("FullyShardedDataParallel", "FSDP"):
            return "fsdp"
        wraps = ("prepare", "prepare_model", "setup", "setup_module")
        if isinstance(call.func, ast.Attribute) and call.func.attr in wraps:
            if _terminal(call.func.value).lower() in ("accelerator", "fabric"):
                return "ddp"
        return None

    def _ddp_through_objects(self) -> None:
        """``trainer.model`` holds the wrapped model when ``trainer`` holds an object of a class of the file whose
        methods set ``self.model = DDP(...)`` (round 28's node preview: a callback handed the trainer runs
        ``trainer.model(batch)``, a DDP forward)."""
        wrapped: dict[str, dict[str, str]] = {}
        for func in self.table.values():
            if func.self_class is not None:
                attrs = wrapped.setdefault(func.self_class, {})
                attrs.update(
                    {
                        n[5:]: k
                        for n, k in self.ddp.get(func.key, {}).items()
                        if n.count(".") == 1 and n.startswith("self.")
                    }
                )
        for key, held in self.objects.items():
            if key is not None and key.startswith("class "):
                continue
            names = self.ddp.setdefault(key, {})
            for name, built in held.items():
                if built.local is None or name.endswith("[]") or name == "self" or "." in name:
                    continue
                for cls in self._ancestors(built.local):
                    for attr, kind in wrapped.get(cls, {}).items():
                        names.setdefault(f"{name}.{attr}", kind)

    def _prepare_ddp(self) -> None:
        """Which names hold a DDP/FSDP-wrapped model in each scope: assigned from the wrapper, sharded with
        ``fully_shard``, a ``self.`` attribute set in any method of the class, inherited from the module or
        an enclosing function, or passed as an argument to a function of the file (fixpoint)."""
        scopes = self._scopes()
        own: dict[str | None, dict[str, str]] = {}
        for key, nodes, unit in scopes:
            names = own.setdefault(key, {})
            for node in nodes:
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                    kind = self._wrapper_kind(node.value, unit)
                    if kind:
                        names.update({n: kind for t in node.targets for n in _target_names(t)})
                elif isinstance(node, ast.Call) and _terminal(node.func) == "fully_shard" and node.args:
                    name = _dotted(node.args[0])
                    if name:
                        names[name] = "fsdp"

        by_class: dict[str, dict[str, str]] = {}  # self.x names of each class's methods (params never hold a dot)
        for f in self.table.values():
            if f.self_class is not None:
                attrs = by_class.setdefault(f.self_class, {})
                attrs.update({n: k for n, k in own.get(f.key, {}).items() if n.startswith("self.")})

        def visible(key: str | None) -> dict[str, str]:
            out = dict(own.get(None, {}))
            func = self.table.get(key) if key is not None else None
            if func is not None:
                chain, parent = [], func.parent
                while parent is not None and parent in self.table and parent not in chain:  # a def wrapper in a def
                    # wrapper has the same key as its parent: without the guard this walked in a circle
                    chain.append(parent)
                    parent = self.table[parent].parent
                for p in reversed(chain):
                    out.update(own.get(p, {}))
                for cls in reversed(self._ancestors(func.self_class) if func.self_class else []):
                    out.update(by_class.get(cls, {}))
            out.update(own.get(key, {}))
            return out

        calls = list(self._calls_of_file_functions(scopes))
        for _ in range(5):
            self.ddp = {key: visible(key) for key, _, _ in scopes}
            changed = False
            for key, callee, params, bound in calls:
                current = self.ddp[key]
                for param, arg in bound:
                    kind = current.get(_dotted(arg) or "")
                    if kind and param in params and own.setdefault(callee, {}).get(param) != kind:
                        own[callee][param] = kind
                        changed = True
            if not changed:
                break
        # then a parameter some call hands a wrapped model and another call a name holding something else
        # (RETURNN's ``_run_step(model, batch)``: the DDP model in training, the bare module in rank 0's
        # evaluation; round 37) holds no wrapped model for sure: its forward is not taken for a DDP forward
        for _ in range(5):
            dropped = False
            for key, callee, _params, bound in calls:
                held = own.get(callee)
                if not held:
                    continue
                for param, arg in bound:
                    name = _dotted(arg) if isinstance(arg, (ast.Name, ast.Attribute)) else None
                    if param in held and (
                        (name is not None and name not in self.ddp[key]) or self._unwrapping_call(arg, key)
                    ):
                        del held[param]
                        dropped = True
            if not dropped:
                break
            self.ddp = {key: visible(key) for key, _, _ in scopes}
        for key, nodes, _ in scopes:
            ddp = self.ddp[key]
            self.ddp_values[key] = _closure(
                _assignments(nodes), set(), lambda value, _, values, ddp=ddp: self._ddp_output(value, ddp, values)
            )

    def _unwrapping_call(self, arg: ast.expr, key: str | None) -> bool:
        """Whether ``arg`` calls a function of the file that hands back the module a DDP/FSDP wrapper holds
        (train-llm-from-scratch's ``unwrap(model)``, ``return model.module if isinstance(model, DDP) else
        model``; see :func:`_unwrapper`): what it returns is no wrapped model, whatever the caller hands it."""
        if not (isinstance(arg, ast.Call) and len(arg.args) == 1 and not arg.keywords):
            return False
        unit = self.table[key].unit if key is not None and key in self.table else None
        callee = self._callee(arg.func, self._class_of(key), unit)
        return callee is not None and callee in self.table and _unwrapper(self.table[callee].node)

    def _calls_of_file_functions(self, scopes) -> Iterator[tuple[str | None, str, list[str], list[tuple]]]:
        """Each call in ``scopes`` of a function of the file: the calling scope, the callee's key, its parameter
        names and the (parameter, argument) pairs the call binds (``self``/``cls`` skipped)."""
        for key, nodes, _ in scopes:
            for node in nodes:
                if not isinstance(node, ast.Call):
                    continue
                callee = self._callee(node.func, self._class_of(key), self.table[key].unit if key else None)
                if callee is None:
                    continue
                params = [a.arg for a in self.table[callee].node.args.args]
                skip = 1 if params[:1] in (["self"], ["cls"]) else 0
                yield (
                    key,
                    callee,
                    params,
                    list(zip(params[skip:], node.args)) + [(k.arg, k.value) for k in node.keywords if k.arg],
                )

    @staticmethod
    def _ddp_output(expr: ast.AST, ddp: dict[str, str], values: set[str]) -> bool:
        """Whether ``expr`` holds (or is computed from) the output of a wrapped model's forward."""
        for node in ast.walk(expr):
            if isinstance(node, ast.Call) and (_dotted(node.func) or "") in ddp:
                return True
            if isinstance(node, (ast.Name, ast.Attribute)) and (_dotted(node) or "") in values:
                return True
        return False

    def _prepare_laundering(self) -> None:
        """Names whose value is the same on every rank from a given line on: the first argument of a
        broadcast/all-reduce/all-gather, or the result of a framework call that returns the same value
        everywhere. ``stop = box[0]`` after ``broadcast_object_list(box)`` is not rank-dependent."""
        for key, nodes, unit in self._scopes():
            lines: dict[str, int] = {}
            self_class = self._class_of(key)
            for node in nodes:
                if isinstance(node, ast.Attribute):
                    getter = self.property_call(node, unit, self_class, key, cached=False)
                    if getter is not None and self._agreeing_call(getter, self_class, unit, key):
                        self.same_result_calls.add(id(node))  # a property returning what an all_reduce agreed
                    continue
                if not isinstance(node, ast.Call):
                    continue
                op = self._collective(node.func, unit)
                entry = self._framework(node, unit, self_class, key)
                equal = (op is not None and op.rpartition(".")[2] in _EQUALIZING) or bool(entry and entry.same_result)
                if (entry is not None and entry.same_result) or self._agreeing_call(node, self_class, unit, key):
                    self.same_result_calls.add(id(node))  # ``if should_stop(loss, rank): break`` too, not only x = ...
                if equal and node.args and isinstance(node.args[0], ast.Name):
                    lines[node.args[0].id] = min(lines.get(node.args[0].id, node.lineno), node.lineno)
            for node in nodes:
                if isinstance(node, ast.Assign) and (
                    id(node.value) in self.same_result_calls or self._agreeing_call(node.value, self_class, unit, key)
                ):
                    for name in (n for t in node.targets for n in _target_names(t)):
                        lines[name] = min(lines.get(name, node.lineno), node.lineno)
            # a name assigned only from values already equal on every rank is equal too from that line on
            # (``if rank != 0: stop = box[0]`` after ``broadcast_object_list(box)``)
            local = {n for names, _, _ in _assignments(nodes) for n in names}
            # ... but not a call made on some ranks only (``if rank == 0: checkpoint = torch.load(path)``): what
            # it returns there (a file's contents) is not what the other ranks hold, even from an agreed path; a
            # plain copy under a rank test is (``if rank != 0: stop = box[0]`` after the broadcast)
            ranked = {
                id(inner)
                for inner in _own_nodes_once(
                    [n.body, n.orelse]
                    for n in nodes
                    if isinstance(n, (ast.If, ast.While)) and self.mentions_rank(n.test, set())
                )
                if isinstance(inner, ast.Assign) and any(isinstance(c, ast.Call) for c in ast.walk(inner.value))
            }
            copies = sorted(
                (n for n in nodes if isinstance(n, ast.Assign) and len(n.targets) == 1 and id(n) not in ranked),
                key=lambda n: n.lineno,
            )
            for node in copies:
                read = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
                if read & self.rank_funcs:  # lintrecall32b: a @rank_zero_only function's result is not a copy
                    continue
                if read and all((lines.get(r, node.lineno) < node.lineno) or r not in local for r in read):
                    if any(r in lines for r in read):
                        for name in _target_names(node.targets[0]):
                            lines[name] = min(lines.get(name, node.lineno), node.lineno)
            self.laundered[key] = lines

    def _agreeing_call(self, value: ast.expr, self_class: str | None, unit: _Unit, scope: str | None = "") -> bool:
        """Whether ``value`` calls a function of the file whose every ``return`` hands back only what a broadcast
        or an all-reduce/all-gather in it made equal on every rank (pillar-pretrain's
        ``broadcast_object(args, obj)``, fairseq's ``all_gather_list``): its result is the same everywhere, so
        ``should_exit = broadcast_object(args, should_exit)`` is no longer rank-dependent."""
        if not isinstance(value, ast.Call):
            return False
        target = self._callee(value.func, self_class, unit)
        if target is None and scope != "":  # a method of an object built from a class of the file
            target = self._indirect(value.func, self_class, scope)
        helper = self.table.get(target) if target is not None else None
        if helper is None:
            return False
        if target not in self._agreeing:
            self._agreeing[target] = False  # a helper that reaches itself again is not agreed through itself
            self._agreeing[target] = self._returns_agreed(helper)
        return self._agreeing[target]

    def _agreed_names(self, helper: _Func, own: list[ast.AST]) -> set[str]:
        """Names of ``helper`` that hold the same value on every rank: those a collective in it made equal, and
        those every assignment of which takes the result of an agreeing helper (``everyone = gather(...)``) or a
        plain builtin of agreed names (``merged = sorted(p for part in everyone for p in part)``)."""
        equal = self._equalized(own, helper.unit)
        values: dict[str, list[ast.expr]] = {}
        for names, value, _ in _assignments(own):
            for name in names:
                values.setdefault(name, []).append(value)
        grown = True
        while grown:
            grown = False
            for name, assigned in values.items():
                if name not in equal and all(
                    self._agreeing_call(v, helper.self_class, helper.unit) or _plain_of(v, equal) for v in assigned
                ):
                    equal.add(name)
                    grown = True
        return equal

    def _returns_agreed(self, helper: _Func) -> bool:
        own = list(_own_nodes(helper.node.body))
        returns = [n.value for n in own if isinstance(n, ast.Return)]
        if returns and all(self._agreeing_call(r, helper.self_class, helper.unit) for r in returns if r is not None):
            return all(r is not None for r in returns)  # ``return gather_results(pairs)``
        equal = self._agreed_names(helper, own)
        if not equal or not returns or any(r is None for r in returns):
            return False
        ranked = {
            n for names, v, _ in _assignments(own) if self.mentions_rank(v, set()) for n in names if n not in equal
        }
        params = {a.arg for a in helper.node.args.args}
        # constants returned as the first statement of an ``if`` on agreed names only (not after a ``try`` or a
        # ``suppress`` that some ranks leave by an exception, round 18's RNG resume)
        decided = {
            id(n.body[0].value)
            for n in own
            if isinstance(n, ast.If)
            and isinstance(n.body[0], ast.Return)
            and n.body[0].value is not None
            and {x.id for x in ast.walk(n.test) if isinstance(x, ast.Name)} <= equal
            and not any(isinstance(x, ast.Call) for x in ast.walk(n.test))
            and any(isinstance(x, ast.Name) for x in ast.walk(n.test))
        }
        for ret in returns:
            if self._agreeing_call(ret, helper.self_class, helper.unit):
                continue
            tests = {id(n) for e in ast.walk(ret) if isinstance(e, ast.IfExp) for n in ast.walk(e.test)}  # type: ignore[arg-type]
            # a name that only picks between agreed values (``... if all_ranks else ...``) is not returned
            read = {n.id for n in ast.walk(ret) if isinstance(n, ast.Name) and id(n) not in tests}  # type: ignore[arg-type]
            if isinstance(ret, ast.Constant) and id(ret) in decided:
                continue  # ``if box[0] is None: return 0`` after the broadcast: the same on every rank
            if not read & equal or any(r not in equal and (r in ranked or r in params) for r in read):
                return False
            for call in (n for n in ast.walk(ret) if isinstance(n, ast.Call)):  # type: ignore[arg-type]
                on_equal = isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name)
                if not (
                    (on_equal and call.func.value.id in equal)  # type: ignore[attr-defined]
                    or (isinstance(call.func, ast.Name) and call.func.id in _PLAIN_BUILTINS)
                ):
                    return False  # ``t.item()`` of an all-reduced ``t`` is equal; another call's result may not be
        return True

    def _prepare_values(self) -> None:
        """For each scope, the names assigned exactly once (to one whole value) and never changed in place:
        what the length analysis may substitute (``usable = n // world * world``)."""
        for key, nodes, _ in self._scopes():
            values: dict[str, list[ast.expr]] = {}
            changed: set[str] = set()
            for names, value, index in _assignments(nodes):
                for name in names:
                    if index is None and len(names) == 1:
                        values.setdefault(name, []).append(value)
                    else:
                        changed.add(name)
            for node in nodes:
                if isinstance(node, ast.AugAssign):
                    changed.update(_target_names(node.target))
                elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                    changed.update(_target_names(node.target))
                elif isinstance(node, (ast.With, ast.AsyncWith)):
                    changed.update(
                        n
                        for item in node.items
                        if item.optional_vars and not _splits_between_ranks(item.context_expr)
                        for n in _target_names(item.optional_vars)
                    )
                elif (
                    isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _MUTATORS
                ):
                    changed.update(_target_names(node.func.value))
                elif isinstance(node, ast.Delete):
                    changed.update(n for t in node.targets for n in _target_names(getattr(t, "value", t)))
            self.values[key] = {n: v[0] for n, v in values.items() if len(v) == 1 and n not in changed}

    def _expand_namespace(self) -> None:
        """For lint_function: add same-module helpers reachable through ``__globals__``."""
        queue = [f for f in self.funcs if f.unit.namespace is not None]
        while queue and len(self.table) < 200:
            func = queue.pop(0)
            for node in _own_nodes(func.node.body):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                    continue
                name = node.func.id
                obj = inspect.unwrap(func.unit.namespace.get(name)) if func.unit.namespace else None
                if name in self.table or not inspect.isfunction(obj) or obj.__module__ != self.module:
                    continue
                try:
                    lines, start = inspect.getsourcelines(obj)
                    source = textwrap.dedent("".join(lines))
                    tree = ast.parse(source)
                except (OSError, TypeError, SyntaxError):
                    continue
                unit = _Unit(
                    tree,
                    source,
                    offset=max(start, 1) - 1,  # lines of the helper's file, as the learner finds them there
                    aliases=_imports([tree]),
                    namespace=obj.__globals__,
                    report=False,
                )
                defs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
                if defs:
                    helper = _Func(name, defs[0], unit, None, None)
                    self.table[name] = helper
                    queue.append(helper)

    def _enclosing_key(self, node: ast.AST) -> str | None:
        """The key of the innermost function of the file that holds ``node`` (None: module level)."""
        best, span = None, None
        for key, func in self.table.items():
            f = func.node
            if f.lineno <= getattr(node, "lineno", -1) <= (f.end_lineno or f.lineno) and any(
                n is node for n in ast.walk(f)
            ):
                size = (f.end_lineno or f.lineno) - f.lineno
                if span is None or size < span:
                    best, span = key, size
        return best

    def constant_rank_params(self, key: str | None) -> frozenset[str]:
        """The rank-named parameters of the function ``key`` (``rank_zero_only``, ``is_main``) that hold the same
        value on every rank: the function is only ever called, directly, by calls of the analysed code that each
        hand that parameter a literal constant or leave it to its literal default, and the function never rebinds
        it. The name says "rank", the value does not differ (round 33's Lightning-style ``def log(self, name,
        value, sync_dist=False, rank_zero_only=False)``, called ``self.log("val_loss", loss, sync_dist=True)``:
        ``if sync_dist and not rank_zero_only: dist.all_reduce(value)`` is taken by every rank or none)."""
        func = self.table.get(key) if key is not None else None
        if func is None:
            return frozenset()
        cached = self._constant_params_cache.get(key)  # type: ignore[arg-type]
        if cached is None:
            cached = self._constant_params_cache[key] = self._find_constant_rank_params(func)  # type: ignore[index]
        return cached

    def _find_constant_rank_params(self, func: _Func) -> frozenset[str]:
        node = func.node
        args = node.args
        if node.decorator_list or args.vararg or args.kwarg:
            return frozenset()
        positional = [a.arg for a in (*args.posonlyargs, *args.args)]
        wanted = [p for p in (*positional, *(a.arg for a in args.kwonlyargs)) if _rank_name(p)]
        if not wanted:
            return frozenset()
        stored = {n.id for n in _own_nodes(node.body) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        wanted = [p for p in wanted if p not in stored]
        name = node.name
        calls = self.calls_named(name)
        # the function's name anywhere but as the callee of a call (``Thread(target=self.log)``, ``map(log, xs)``):
        # calls lint cannot see
        if not calls or not wanted or name in self._uncalled_references:
            return frozenset()
        defaults = dict(zip(positional[len(positional) - len(args.defaults) :], args.defaults))
        defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
        skip = 1 if func.self_class is not None and positional[:1] == ["self"] else 0
        found = set()
        for param in wanted:
            index = positional.index(param) - skip if param in positional else None
            for call in calls:
                if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
                    break
                given = next((k.value for k in call.keywords if k.arg == param), None)
                if given is None and index is not None and 0 <= index < len(call.args):
                    given = call.args[index]
                given = given if given is not None else defaults.get(param)
                if not isinstance(given, ast.Constant):
                    break
            else:
                found.add(param)
        return frozenset(found)

    @cached_property
    def _uncalled_references(self) -> frozenset[str]:
        """Identifiers used somewhere as a name or attribute other than a call's callee (``target=self.log``)."""
        callees = {id(n.func) for unit in self.units for n in ast.walk(unit.tree) if isinstance(n, ast.Call)}
        found = set()
        for unit in self.units:
            for n in ast.walk(unit.tree):
                if id(n) in callees:
                    continue
                if isinstance(n, ast.Name):
                    found.add(n.id)
                elif isinstance(n, ast.Attribute):
                    found.add(n.attr)
        return frozenset(found)

    def calls_named(self, name: str) -> list[ast.Call]:
        """Every call in the analysed code whose callee's last identifier is ``name`` (indexed once)."""
        if self._calls_by_name is None:
            self._calls_by_name = {}
            for unit in self.units:
                for node in ast.walk(unit.tree):
                    if isinstance(node, ast.Call):
                        self._calls_by_name.setdefault(_terminal(node.func), []).append(node)
        return self._calls_by_name.get(name, [])

    def _prepare_local_funcs(self) -> None:
        """Functions of the file that return this rank's own model output (``train_step`` returning its
        ``loss.item()``), not agreed by a collective first: a loop left on their result is left on local data.
        Also the parameters that some call of the file hands a rank-dependent value (``generate(model, prompt)``
        with a prompt chosen by rank): ``rank_params``."""
        for _ in range(4):
            grew = False
            for key, nodes, unit in self._scopes():
                taint = self.module_taint if key is None else self.func_taint.get(key, set())
                taint = taint | self.rank_params.get(key or "", set())
                self_class = self._class_of(key)
                for node in nodes:
                    if not isinstance(node, ast.Call):
                        continue
                    callee = self._callee(node.func, self_class, unit)
                    if callee is None:
                        continue
                    params = [a.arg for a in self.table[callee].node.args.args]
                    skip = 1 if params[:1] in (["self"], ["cls"]) else 0
                    bound = list(zip(params[skip:], node.args)) + [(k.arg, k.value) for k in node.keywords if k.arg]
                    mine = self.rank_params.setdefault(callee, set())
                    for param, arg in bound:
                        if param in params and param not in mine and self.mentions_rank(arg, taint, files=False):
                            mine.add(param)
                            grew = True
            if not grew:
                break
        for _ in range(4):
            grew = False
            for func in self.funcs:
                if func.key in self.local_funcs:
                    continue
                walker = _Walker(self, func.unit, self.func_taint.get(func.key, set()), func.self_class, func.key)
                values = [n.value for n in _own_nodes(func.node.body) if isinstance(n, ast.Return) and n.value]
                if any(walker._local_source(v, walker.local) for v in values):
                    self.local_funcs.add(func.key)
                    grew = True
            if not grew:
                break

    def _prepare_raisers(self) -> None:
        """Functions of the file that can leave by an exception or exit of their own: a ``raise`` (or
        ``sys.exit()``) not inside a ``try`` that has handlers, or a call, outside such a ``try``, to a function
        that can (fixpoint). Called under a rank-dependent condition before a collective, they are an early exit
        of some ranks. Maps the function to the line of the ``raise``."""
        direct: dict[str, str] = {}
        calls: dict[str, list[tuple[str, int]]] = {}

        def where(node: ast.AST, unit: _Unit) -> str:
            """The raise's line as the reader finds it: in its file (or cell), naming the module or the cell when
            it is not the linted file's own code."""
            line = f"line {node.lineno + unit.offset}"  # type: ignore[attr-defined]
            if unit.prefix:
                return f"{line} of {unit.prefix}"
            return f"cell {unit.cell}, {line}" if unit.cell is not None else line

        def visit(node: ast.AST, key: str, func: _Func, guarded: bool) -> None:
            if isinstance(node, _SCOPES):
                return
            if isinstance(node, ast.Try) and node.handlers:
                for stmt in node.body:
                    visit(stmt, key, func, True)
                for part in (*node.handlers, *node.orelse, *node.finalbody):
                    visit(part, key, func, guarded)
                return
            if not guarded:
                if isinstance(node, ast.Raise):
                    direct.setdefault(key, where(node, func.unit))
                elif isinstance(node, ast.Call):
                    if _dotted(node.func) in _EXIT_CALLS:
                        direct.setdefault(key, where(node, func.unit))
                    else:
                        callee = self._callee(node.func, func.self_class, func.unit)
                        if callee:
                            calls.setdefault(key, []).append((callee, node.lineno))
            for child in ast.iter_child_nodes(node):
                visit(child, key, func, guarded)

        for key, func in self.table.items():
            for stmt in func.node.body:
                visit(stmt, key, func, False)
            taint = self.strict_taint.get(key, set())
            # a test on what a broadcast or all_reduce handed every rank is the same on every rank (round 38's
            # correct items: rank 0's download outcome broadcast, then every rank raises on it together)
            laundered = self.laundered.get(key) or None
            found = self._strictly(
                _ranked_raise,
                func.node.body,
                lambda test, t=taint, w=laundered: self.mentions_rank(test, t, w, files=False),
            )
            if found is not None:
                self.rank_raisers[key] = found
        self._prepare_param_raisers()
        self.raisers = dict(direct)
        callers: dict[str, list[str]] = {}
        for key, targets in calls.items():
            for callee, _ in targets:
                callers.setdefault(callee, []).append(key)
        frontier = list(direct)
        while frontier:  # breadth first from the functions that raise themselves: each function once
            found: dict[str, str] = {}
            for done in frontier:
                for key in callers.get(done, ()):
                    if key not in self.raisers and key not in found:
                        found[key] = next(self.raisers[c] for c, _ in calls[key] if c in self.raisers)
            self.raisers.update(found)
            frontier = list(found)

    def exits_process(self, key: str, seen: frozenset[str] = frozenset()) -> bool:
        """Whether function ``key`` of the file, or one it calls, can end the process past ``except Exception``:
        an exit call (``sys.exit()``) or a raise of ``SystemExit``/``KeyboardInterrupt``/... (True when lint loses
        track: deeper than ``_MAX_DEPTH`` calls)."""
        if key in self._exits_cache:
            return self._exits_cache[key]
        if len(seen) > _MAX_DEPTH:
            return True
        func = self.table[key]
        found = False
        for node in _own_nodes(func.node.body):
            if isinstance(node, ast.Call):
                if _dotted(node.func) in _EXIT_CALLS:
                    found = True
                else:
                    callee = self._callee(node.func, func.self_class, func.unit)
                    found = callee is not None and callee in self.table and callee not in seen | {key}
                    found = found and self.exits_process(callee, seen | {key})  # type: ignore[arg-type]
            elif isinstance(node, ast.Raise) and node.exc is not None:
                exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                found = _terminal(exc) in _NOT_OWN_ERRORS if isinstance(exc, (ast.Name, ast.Attribute)) else False
            if found:
                break
        self._exits_cache[key] = found
        return found

    def _prepare_param_raisers(self) -> None:
        """Functions whose raise sits under a test on their parameters (or values computed from them), before a
        collective they reach, or that hand such a parameter on to one (fixpoint): ``param_raisers[key]`` is
        (those parameters, the test)."""
        datas: dict[str, dict[str, str]] = {}  # function -> name -> the parameter it comes from
        for key, func in self.table.items():
            origin = _from_parameters(func)
            datas[key] = origin
            if key not in self.reach:
                continue
            reads: set[str] = set()

            def on_data(test: ast.expr, origin: dict[str, str] = origin, reads: set[str] = reads) -> bool:
                found = {origin[n.id] for n in ast.walk(test) if isinstance(n, ast.Name) and n.id in origin}
                reads |= found
                return bool(found)

            raised = _ranked_raise(func.node.body, on_data)
            if raised is not None and self._before_collective(func, raised[1]):
                self.param_raisers[key] = (frozenset(reads), raised[0])
        for _ in range(3):
            for key, func in self.table.items():
                if key in self.param_raisers or key not in self.reach:
                    continue
                for node in _own_nodes(func.node.body):
                    if not isinstance(node, ast.Call):
                        continue
                    callee = self._callee(node.func, func.self_class, func.unit)
                    if callee not in self.param_raisers:
                        continue
                    params, cond = self.param_raisers[callee]
                    names = [a.arg for a in self.table[callee].node.args.args]
                    skip = 1 if names[:1] in (["self"], ["cls"]) else 0
                    bound = list(zip(names[skip:], node.args)) + [(k.arg, k.value) for k in node.keywords if k.arg]
                    mine = {
                        datas[key][n.id]
                        for p, a in bound
                        if p in params
                        for n in ast.walk(a)
                        if isinstance(n, ast.Name) and n.id in datas[key]
                    }
                    if mine:
                        self.param_raisers[key] = (frozenset(mine), f"{cond} in {_dotted(node.func)}()")
                        break

    def data_gate(self, key: str) -> tuple[frozenset[str], str, str, str] | None:
        """(parameters, the test's text, the function the gated call reaches, that call as written) when ``key`` makes a call that
        reaches a collective under an ``if`` on its parameters (or values computed from them) with no such call
        in the other branch: ``if pixel_values is not None: image_embeds = self.encode_images(pixel_values)``.
        None otherwise, or when the test also reads the rank."""
        if key in self._data_gates:
            return self._data_gates[key]
        self._data_gates[key] = None
        func = self.table.get(key)
        if func is None or key not in self.reach:
            return None
        origin = _parameter_sources(func)
        agreed = self.laundered.get(key, {})  # names a broadcast or all_reduce made the same everywhere, by line

        def reaching(stmts: list[ast.stmt], after: int = 0) -> tuple[ast.Call, _Call] | None:
            for node in _own_nodes(stmts):
                if isinstance(node, ast.Call) and node.lineno > after:
                    found = self.classify(node, func.unit, func.self_class, func.key)
                    if found is not None and (found.kind == "coll" or found.target in self.reach):
                        return node, found
            return None

        for node in _own_nodes(func.node.body):
            if not isinstance(node, ast.If):
                continue
            read = {
                param
                for n in ast.walk(node.test)
                if isinstance(n, ast.Name) and n.id in origin and not (n.id in agreed and node.lineno > agreed[n.id])
                for param in origin[n.id]
            }
            if not read or self.mentions_rank(node.test, self.func_taint.get(key, set())):
                continue
            text = func.unit.text(node.test)
            negated = (
                func.unit.text(node.test.operand)
                if isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not)
                else f"not ({text})"
            )
            inside, other = reaching(node.body), reaching(node.orelse)
            if (inside is None) != (other is None):
                gated, text = (inside, text) if inside is not None else (other, negated)
            elif inside is None and _skips(node.body) and not node.orelse and node in func.node.body:
                # ``if not rows: return`` before the function's collective: the ranks the test holds on leave
                gated, text = reaching(func.node.body, node.end_lineno or node.lineno), negated
            else:
                continue
            if gated is None:
                continue
            call, found = gated
            shown = found.display
            self._data_gates[key] = (frozenset(read), text, found.target if found.kind == "call" else "", shown)
            self._gate_tests[key] = node.test
            break
        return self._data_gates[key]

    def loop_gate(self, key: str) -> tuple[ast.For, str, str] | None:
        """(the loop, the function the call in its body reaches, that call as written) when ``key`` runs a ``for``
        loop over its parameters (``for batch in loader:``, ``range(0, len(shard), bs)``, or a name computed from
        a parameter) whose body makes, on every trip, a call that reaches a collective: no ``break``, ``return``,
        ``raise`` or ``continue`` in it (but for leading ``if k >= max_iters: break`` caps, see :func:`_loop_caps`),
        the call not under an ``if`` or an inner loop; inside ``with Join(...)``/``model.join()`` (which shadows
        the DDP and Joinable collectives of ranks that ran out) only a plain ``dist.*`` collective counts. The
        number of those calls is then the number of items the loop runs over. None otherwise."""
        if key in self._loop_gates:
            return self._loop_gates[key]
        self._loop_gates[key] = None
        func = self.table.get(key)
        if func is None or key not in self.reach:
            return None
        origin = _parameter_sources(func)
        agreed = self.laundered.get(key, {})
        joined = [
            n
            for n in _own_nodes(func.node.body)
            if isinstance(n, ast.With)
            and any(
                isinstance(i.context_expr, ast.Call) and _terminal(i.context_expr.func) in ("Join", "join")
                for i in n.items
            )
        ]
        for node in _own_nodes(func.node.body):
            if not isinstance(node, ast.For) or node.orelse:
                continue
            read = [
                n.id
                for n in ast.walk(node.iter)
                if isinstance(n, ast.Name) and n.id in origin and not (n.id in agreed and node.lineno > agreed[n.id])
            ]
            if not read:
                continue
            # under `with Join([...])` the Joinables shadow the collectives of the ranks that ran out: DDP's, and a
            # Joinable's own; a plain torch.distributed call in the loop is shadowed by none (round 13's loss log)
            under_join = any(w.lineno <= node.lineno <= (w.end_lineno or w.lineno) for w in joined)
            caps = _loop_caps(node)
            if any(
                isinstance(n, (ast.Break, ast.Continue, ast.Return, ast.Raise))
                for n in _own_nodes(node.body[len(caps) :])
            ):
                continue
            stmts = list(node.body[len(caps) :])
            while stmts:
                stmt = stmts.pop(0)
                if isinstance(stmt, ast.With):
                    stmts = list(stmt.body) + stmts
                    continue
                if not isinstance(stmt, (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign)):
                    continue
                for inner in ast.walk(stmt):
                    if not isinstance(inner, ast.Call):
                        continue
                    found = self.classify(inner, func.unit, func.self_class, func.key)
                    if under_join and not (
                        found is not None
                        and found.kind == "coll"
                        and isinstance(inner.func, ast.Attribute)
                        and _dotted(inner.func.value) in ("dist", "torch.distributed")
                    ):
                        continue
                    if found is not None and (found.kind == "coll" or found.target in self.reach):
                        target = found.target if found.kind == "call" else ""
                        self._loop_gates[key] = (node, target, found.display)
                        return self._loop_gates[key]
        return None

    def _before_collective(self, func: _Func, raised: ast.AST) -> bool:
        """Whether a collective (or a call reaching one) of ``func`` comes after the line of ``raised``."""
        for node in _own_nodes(func.node.body):
            if isinstance(node, ast.Call) and node.lineno > raised.lineno:
                found = self.classify(node, func.unit, func.self_class, func.key)
                if found is not None and (found.kind == "coll" or found.target in self.reach):
                    return True
        return False

    def _prepare_reach(self) -> None:
        """Which functions reach a collective, and through which call: breadth first from the functions that
        make one themselves, so each function's chain is a shortest one (its first call, in line order, to a
        function found in an earlier round). Each function is scanned once: linear in the file's calls."""
        calls: dict[str, list[_Call]] = {}
        callers: dict[str, list[str]] = {}
        placed: dict[str, list[tuple[ast.Call, _Call]]] = {}
        for func in self.table.values():
            own = list(_own_nodes(func.node.body))
            implicit = [
                c
                for n in own
                if isinstance(n, (ast.Call, ast.FormattedValue, ast.For, ast.AsyncFor, ast.comprehension))
                for c in self.dunder_calls(n, func.unit, func.self_class, func.key)
            ]
            # a property's getter runs where it is read (``self.global_avg`` in ``__str__``)
            implicit += [
                c
                for n in own
                if isinstance(n, ast.Attribute)
                and (c := self.property_call(n, func.unit, func.self_class, func.key, cached=False)) is not None
            ]
            nodes = sorted(
                [*(n for n in own if isinstance(n, ast.Call)), *implicit],
                key=lambda n: (n.lineno, n.col_offset),
            )
            placed[func.key] = [(n, c) for n in nodes if (c := self.classify(n, func.unit, func.self_class, func.key))]
        if not self.has_buffers:
            self._drop_forwards_without_grad(placed)
        self._placed = placed  # for :meth:`fixed_collectives`
        for func in self.table.values():
            calls[func.key] = [c for _, c in placed[func.key]] + self._decorator_wrappers(func)
            for node, call in placed[func.key]:  # ``logger.write(...)`` on an element of a list of several classes
                if call.kind == "call" and isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                    receiver = node.func.value
                    if isinstance(receiver, ast.Name) and receiver.id not in ("self", "cls"):
                        built = self._constructed(receiver.id, func.key, func.self_class)
                        if built is not None and built.alternatives:
                            for method in self._element_methods(built, node.func.attr):
                                if method != call.target:
                                    calls[func.key].append(_Call("call", call.display, method))
            for call in calls[func.key]:
                if call.kind == "call":
                    callers.setdefault(call.target, []).append(func.key)
        implicit = [*self._implicit.values()]  # ``len(x)`` runs ``x.__len__``: shown in the chain
        frontier = []
        for key, seq in calls.items():
            first = next((c for c in seq if c.kind == "coll"), None)
            if first is not None:
                self.reach[key] = (first.display, None)
                self.reach_notes[key] = first.note
                frontier.append(key)
        while frontier:
            found: dict[str, tuple[str, str, str]] = {}
            for done in frontier:
                for key in callers.get(done, ()):
                    if key in self.reach or key in found:
                        continue
                    call = next(c for c in calls[key] if c.kind == "call" and c.target in self.reach)
                    display = f"{call.display} -> {call.target}" if call in implicit else call.display
                    found[key] = (display, call.target, call.note)
            for key, (display, target, note) in found.items():
                self.reach[key] = (display, target)
                self.reach_notes[key] = note or self.reach_notes.get(target, "")
            frontier = list(found)

    def _drop_forwards_without_grad(self, placed: dict[str, list[tuple[ast.Call, _Call]]]) -> None:
        """Calls made with gradients off (``with torch.no_grad():``) of functions of the file whose only
        collectives are DDP forwards: for a model without buffers such a forward issues nothing (round 19's
        ``evaluate`` calling ``task_loss(model, ...)`` under ``no_grad`` on rank 0 alone). Functions that reach
        other collectives keep every call."""
        own = {key: [c for _, c in seq if c.kind == "coll"] for key, seq in placed.items()}
        callees = {key: {c.target for _, c in seq if c.kind == "call"} for key, seq in placed.items()}
        reaching = {key for key, colls in own.items() if colls}
        grown = True
        while grown:
            grown = False
            for key, targets in callees.items():
                if key not in reaching and targets & reaching:
                    reaching.add(key)
                    grown = True
        forward_only = {key for key in reaching if all(c.target.startswith("ddp.forward.") for c in own[key])}
        shrunk = True
        while shrunk:
            shrunk = False
            for key in list(forward_only):
                if any(t in reaching and t not in forward_only for t in callees[key]):
                    forward_only.discard(key)
                    shrunk = True
        if not forward_only:
            return
        for key, seq in placed.items():
            placed[key] = [
                (node, c)
                for node, c in seq
                if not (
                    c.kind == "call"
                    and c.target in forward_only
                    and "no_grad" in self.contexts.get(id(node), frozenset())
                )
            ]

    def _decorator_wrappers(self, func: _Func) -> list[_Call]:
        """A call of ``func`` runs the wrapper of each decorator of the file it carries (``@synced`` whose
        ``wrapper`` calls ``fn(...)`` and then ``dist.barrier()``): the decorator's nested function that it
        returns."""
        out = []
        for deco in func.node.decorator_list:
            key = self._callee(deco, func.self_class, func.unit) if isinstance(deco, ast.Name) else None
            decorator = self.table.get(key) if key is not None else None
            if decorator is None:
                continue
            nested = {n.name: n for n in decorator.node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
            returned = [
                n.value.id
                for n in _own_nodes(decorator.node.body)
                if isinstance(n, ast.Return) and isinstance(n.value, ast.Name) and n.value.id in nested
            ]
            for name in returned[:1]:
                wrapper = next((f for f in self.funcs if f.node is nested[name]), None)
                if wrapper is not None and self.table.get(wrapper.key) is wrapper:
                    out.append(_Call("call", f"@{deco.id}", wrapper.key))  # type: ignore[attr-defined]
        return out

    def chain(self, key: str) -> tuple[str, ...]:
        """The calls from function ``key`` down to its collective; a chain longer than
        :data:`_MAX_CHAIN` is shown by its ends (``a -> b -> ... (790 calls) -> y -> z``)."""
        shown: list[str] = []
        step: str | None = key
        while step is not None:
            display, step = self.reach[step]
            shown.append(display)
        if len(shown) > _MAX_CHAIN:
            keep = _MAX_CHAIN // 2
            shown = [*shown[:keep], f"... ({len(shown) - 2 * keep} calls)", *shown[-keep:]]
        return tuple(shown)

    def fixed_collectives(self, key: str, depth: int = 0) -> tuple[tuple, ...] | None:
        """The collectives function ``key`` of the file makes on every call, in order, whatever its arguments and
        the rank (their trace keys, as :meth:`_Walker._op` makes them), or None when lint cannot tell: each one is
        made by a statement of its own at the top level of the function's body (no test, loop, ``try`` or
        ``with`` around it), directly or through a function of the file that is fixed too, and nothing in the
        function leaves it early (``return``, ``raise`` or an exit other than its last statement, a call that
        raises). Two branches calling different such functions make the same collectives when these agree
        (review87l C1: rank 0 calls ``save_and_sync()``, a save then ``dist.barrier()``, the others ``sync()``,
        which is ``dist.barrier()``). Worked out once per function."""
        cache: dict[str, tuple[tuple, ...] | None] = self.__dict__.setdefault("_fixed_of", {})
        if key in cache:
            return cache[key]
        if depth > 20:  # a long chain of helpers: not followed (and not kept, so a shorter way in may still tell)
            return None
        cache[key] = None  # a function that reaches itself is not fixed
        func = self.table.get(key)
        placed = getattr(self, "_placed", {}).get(key)
        found = None
        if func is not None and placed is not None and key not in self.raisers and not func.node.decorator_list:
            found = self._fixed(func, placed, depth)
        cache[key] = found
        return found

    def _fixed(self, func: _Func, placed: list[tuple[ast.AST, _Call]], depth: int) -> tuple[tuple, ...] | None:
        body = func.node.body
        top: dict[int, ast.stmt] = {}
        for i, stmt in enumerate(body):
            for node in _own_nodes([stmt]):
                top[id(node)] = stmt
                leaves = isinstance(node, (ast.Return, ast.Raise)) or (
                    isinstance(node, ast.Call) and (_dotted(node.func) in _EXIT_CALLS or _ends_the_group(node))
                )
                if leaves and i != len(body) - 1:
                    return None
        seq: list[tuple] = []
        used: set[int] = set()
        for node, call in placed:
            if call.kind == "call" and call.target not in self.reach:
                continue
            stmt = top.get(id(node))
            simple = isinstance(stmt, (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return))
            if not simple or id(stmt) in used or not isinstance(node, ast.Call):
                return None
            used.add(id(stmt))
            if call.kind == "coll":
                seq.append(("op", call.target))
                continue
            if call.target in self.raisers or self.switched_off(node, call.target):
                return None
            inner = self.fixed_collectives(call.target, depth + 1)
            if inner is None:
                return None
            seq.extend(inner)
        return tuple(seq) or None

    def classify(self, call: ast.Call, unit: _Unit, self_class: str | None, scope: str | None = None) -> _Call | None:
        """A call to a same-module function (``call``) or a collective (``coll``): torch.distributed, a
        framework call of FRAMEWORK_COLLECTIVES, or a DDP/FSDP-wrapped model's forward or backward."""
        if id(call) in self._implicit:
            return self._implicit[id(call)]
        written = _dotted(call.func)
        if written is not None:
            target = self._callee(call.func, self_class, unit)
            if target:
                return _Call("call", written, target)
            canonical = self._collective(call.func, unit)
            if canonical:
                return _Call("coll", written, canonical)
        entry = self._framework(call, unit, self_class, scope)
        if entry is not None and entry.framework == _ZERO and "join" in self.contexts.get(id(call), frozenset()):
            entry = None  # ZeroRedundancyOptimizer is Joinable: inside ``with Join([...])`` a finished rank's join
            # hook shadows the broadcasts of the others' steps (torch's generic_join tutorial)
        if entry is not None:
            shown = written or f"{unit.text(call.func)}"
            if entry.name == "forward" and _terminal(call.func) != "forward":
                shown += "()"  # the object itself is called
            target = f"{entry.framework}.{entry.name}"
            return _Call("coll", shown, target, f"{entry.framework}: {entry.issues}", entry.advice)
        found = self._ddp_op(call, unit, scope)
        if found is None and written is not None:
            made = self._dataclass_init(call, unit, self_class, scope)
            if made is not None:
                return made
        if found is None and written is not None:
            target = self._indirect(call.func, self_class, scope)
            if target:
                return _Call("call", written, target)
        if found is None and isinstance(call.func, ast.Attribute) and _HOOK_REGISTRATION.fullmatch(call.func.attr):
            for arg in [*call.args, *(k.value for k in call.keywords)]:
                target = self._hook_function(arg, unit, self_class, scope)
                if target is not None:
                    when = _HOOK_REGISTRATION.fullmatch(call.func.attr).group(1)  # type: ignore[union-attr]
                    note = f"in the hook registered here, run at every {_HOOK_MOMENTS.get(when, 'event it hooks')}"
                    shown = f"{written or call.func.attr}({self.table[target].node.name})"
                    return _Call("call", shown, target, note)
        if found is None and isinstance(call.func, ast.Attribute):
            registered = self._registration(call, unit, self_class, scope)
            if registered is not None:
                return registered
        if (
            found is None
            and isinstance(call.func, ast.Attribute)
            and call.func.attr in ("load_state_dict", "state_dict")
        ):
            built = self._constructed(_dotted(call.func.value), scope, self_class)
            hooked = self._module_hook(built.local, call.func.attr) if built is not None and built.local else None
            if hooked is not None:
                cls, target = hooked
                note = f"in the {call.func.attr} hook that {cls} registers, run by this call"
                return _Call("call", written or f"{unit.text(call.func)}", target, note)
        if found is None and written is None and isinstance(call.func, ast.Attribute):
            target = self._method_of_returned(call.func, unit, self_class, scope)
            if target:
                return _Call("call", f"{_dotted(call.func.value.func)}(...).{call.func.attr}", target)  # type: ignore[attr-defined]
        if found is None and isinstance(call.func, ast.Name):
            alias = self._alias(call.func.id, scope)
            if alias is not None:
                target = self._callee(alias, self_class, unit)
                if target:
                    return _Call("call", written or call.func.id, target)
                canonical = self._collective(alias, unit)
                if canonical:
                    return _Call("coll", f"{call.func.id} (= {_dotted(alias)})", canonical)
        return found

    def property_call(
        self, node: ast.Attribute, unit: _Unit, self_class: str | None, scope: str | None, cached: bool = True
    ) -> ast.Call | None:
        """Reading ``obj.name`` where ``name`` is a ``@property``/``@cached_property`` of a class of the file
        runs its getter: the call it stands for (made once per node, so a finding is made once), or None —
        also when ``cached`` and a ``cached_property`` was read before in the same function (the getter ran
        then; ``cached=False`` asks what the read returns, whether or not the getter runs at it)."""
        if id(node) not in self._property_calls:
            made = None
            held = (  # ``self.trainer.log_dir``: a property of the object a ``self.`` attribute holds (round 35)
                isinstance(node.value, ast.Attribute)
                and isinstance(node.value.value, ast.Name)
                and node.value.value.id == "self"
            )
            if isinstance(node.ctx, ast.Load) and (isinstance(node.value, ast.Name) or held):
                target = self._callee(node, self_class, unit) or self._indirect(node, self_class, scope)
                func = self.table.get(target or "")
                decorators = func.node.decorator_list if func is not None else []
                kinds = {_terminal(d.func if isinstance(d, ast.Call) else d) for d in decorators}
                if kinds & _PROPERTIES:
                    made = ast.copy_location(ast.Call(func=node, args=[], keywords=[]), node)
                    made.end_lineno, made.end_col_offset = node.end_lineno, node.end_col_offset
                    if "cached_property" in kinds and self._read_before(node, unit, scope):
                        self._cached_reads.add(id(node))
            self._property_calls[id(node)] = made
        made = self._property_calls[id(node)]
        return None if cached and id(node) in self._cached_reads else made

    def dunder_calls(self, node: ast.AST, unit: _Unit, self_class: str | None, scope: str | None) -> list[ast.Call]:
        """The methods of a class of the file that ``node`` runs without naming them: ``len(x)`` its
        ``__len__``, ``str(x)``/``print(x)`` its ``__str__``, ``repr(x)`` its ``__repr__``, and an f-string's
        ``{x}`` its ``__format__`` (else ``__str__``; ``{x!r}``: ``__repr__``) -- each as the call it stands for
        (``x.__len__()``, made once per node), when lint knows ``x``'s class (``self``, or an object built from a
        class of the file). torchvision's ``MetricLogger`` all-reduces inside ``__str__`` (round 20)."""
        iterated = self._iterated(node, unit)
        if iterated is not None:
            return self.loader_iteration(iterated, unit, self_class, scope)
        if isinstance(node, ast.FormattedValue):
            if node.conversion == ord("r"):
                wanted: tuple[str, ...] = ("__repr__",)
            else:
                wanted = ("__format__", "__str__", "__repr__")
            pairs = [(node.value, wanted)]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _DUNDER_BUILTINS:
            if node.func.id in unit.aliases or self._callee(node.func, self_class, unit):
                return []  # a name of the file's own, not the builtin
            methods = _DUNDER_BUILTINS[node.func.id]
            args = node.args if node.func.id == "print" else node.args[:1]
            pairs = [(arg, methods) for arg in args if not isinstance(arg, ast.Starred)]
        else:
            return []
        made: list[ast.Call] = []
        for value, methods in pairs:
            if not isinstance(value, (ast.Name, ast.Attribute)):
                continue
            key = (id(value), methods)
            if key not in self._dunder_calls:
                self._dunder_calls[key] = None
                for method in methods:
                    func = ast.copy_location(ast.Attribute(value=value, attr=method, ctx=ast.Load()), value)
                    func.end_lineno, func.end_col_offset = value.end_lineno, value.end_col_offset
                    target = self._callee(func, self_class, unit) or self._indirect(func, self_class, scope)
                    if target is None and method == "__len__":
                        target = self._loader_length(value, self_class, scope)
                    if target is not None and self.table[target].self_class is not None:
                        call = ast.copy_location(ast.Call(func=func, args=[], keywords=[]), value)
                        call.end_lineno, call.end_col_offset = value.end_lineno, value.end_col_offset
                        self._dunder_calls[key] = call
                        shown = unit.text(value)
                        if isinstance(node, ast.FormattedValue):
                            shown = f'f"{{{shown}}}"'
                        else:
                            shown = f"{node.func.id}({shown})"  # type: ignore[union-attr]
                        self._implicit[id(call)] = _Call("call", shown, target)
                        break
            if self._dunder_calls[key] is not None:
                made.append(self._dunder_calls[key])  # type: ignore[arg-type]
        return made

    @staticmethod
    def _iterated(node: ast.AST, unit: _Unit) -> ast.expr | None:
        """What ``node`` starts an iterator over: the iterable of a ``for`` or of a comprehension, the argument of
        a builtin ``iter(x)``."""
        if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            return node.iter
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "iter"
            and "iter" not in unit.aliases
            and len(node.args) == 1
        ):
            return node.args[0]
        return None

    def loader_iteration(
        self, value: ast.expr, unit: _Unit, self_class: str | None, scope: str | None
    ) -> list[ast.Call]:
        """A new iterator over a ``DataLoader`` whose dataset is an ``IterDataPipe`` (``IterableWrapper(rows)``):
        a gloo ``new_group`` and a broadcast, as a call made once per node (see :data:`_DATAPIPE_MODULES`)."""
        if not isinstance(value, (ast.Name, ast.Attribute)) or _dotted(value) is None:
            return []
        key = (id(value), ("__iter__",))
        if key not in self._dunder_calls:
            self._dunder_calls[key] = None
            built = self._constructed(_dotted(value), scope, self_class)
            if (
                built is not None
                and set(built.classes) & _LOADERS
                and self._datapipe(built.options.get("dataset"), unit)
            ):
                func = ast.copy_location(ast.Attribute(value=value, attr="__iter__", ctx=ast.Load()), value)
                func.end_lineno, func.end_col_offset = value.end_lineno, value.end_col_offset
                call = ast.copy_location(ast.Call(func=func, args=[], keywords=[]), value)
                call.end_lineno, call.end_col_offset = value.end_lineno, value.end_col_offset
                self._dunder_calls[key] = call
                self._implicit[id(call)] = _Call(
                    "coll",
                    f"iter({unit.text(value)})",
                    "torch.utils.data.DataLoader.__iter__",
                    "a DataLoader over an IterDataPipe: each new iterator makes a gloo new_group and broadcasts a "
                    "shared seed in it (torch/utils/data/dataloader.py, _BaseDataLoaderIter.__init__)",
                )
        made = self._dunder_calls[key]
        return [made] if made is not None else []

    def _datapipe(self, dataset: ast.expr | None, unit: _Unit) -> bool:
        """Whether ``dataset`` is built from an ``IterDataPipe`` class: one of torch's or torchdata's iter
        datapipes, or a class of the file deriving from ``IterDataPipe``."""
        if not isinstance(dataset, ast.Call) or _dotted(dataset.func) is None:
            return False
        name = _terminal(dataset.func)
        if name in self.bases:
            return any(
                b.rpartition(".")[2] in _DATAPIPE_BASES
                for c in self._ancestors(name)
                for b in self.base_names.get(c, [])
            )
        full = self._resolve(dataset.func, unit)
        return any(full.startswith(m + ".") for m in _DATAPIPE_MODULES)

    def _loader_length(self, value: ast.expr, self_class: str | None, scope: str | None) -> str | None:
        """``len(loader)`` of a ``DataLoader`` built over a dataset of a class of the file: its ``__len__``
        (a ``DataLoader`` answers with ``len(dataset)`` for an iterable dataset, and with ``len(sampler)``, by
        default ``len(dataset)``, for a map-style one; torch/utils/data/dataloader.py ``__len__``)."""
        built = self._constructed(_dotted(value), scope, self_class)
        dataset = built.options.get("dataset") if built is not None and set(built.classes) & _LOADERS else None
        if dataset is None or "sampler" in built.options or "batch_sampler" in built.options:  # type: ignore[union-attr]
            return None
        if isinstance(dataset, ast.Call):
            local = _terminal(dataset.func) if _terminal(dataset.func) in self.bases else None
        else:
            inner = self._constructed(_dotted(dataset), scope, self_class)
            local = inner.local if inner is not None else None
        for cls in self._ancestors(local) if local else ():
            if f"{cls}.__len__" in self.table:
                return f"{cls}.__len__"
        return None

    def _read_before(self, node: ast.Attribute, unit: _Unit, scope: str | None) -> bool:
        """Whether the same ``obj.name`` is read earlier in the same function (or module): a
        ``cached_property`` runs its getter at the first read only."""
        where = self.table[scope].node if scope in self.table else unit.tree
        text = _dotted(node)
        return any(
            isinstance(n, ast.Attribute)
            and _dotted(n) == text
            and (n.lineno, n.col_offset) < (node.lineno, node.col_offset)
            for n in ast.walk(where)
        )

    def _alias(self, name: str, scope: str | None) -> ast.expr | None:
        """What a name assigned once stands for when it is called: ``fn = dist.all_reduce``,
        ``sync = functools.partial(dist.all_reduce, op=...)``, ``reduce = lambda t: dist.all_reduce(t)`` -> the
        function it calls (in this scope or at module level)."""
        for key in (scope, None):
            value = self.values.get(key, {}).get(name)
            if value is None:
                continue
            if isinstance(value, ast.Call) and _terminal(value.func) == "partial" and value.args:
                value = value.args[0]
            elif isinstance(value, ast.Lambda) and isinstance(value.body, ast.Call):
                value = value.body.func
            if isinstance(value, (ast.Name, ast.Attribute)) and _dotted(value) not in (None, name):
                return value
            return None
        return None

    def under_rank_test(self, call: ast.AST, key: str | None, unit: _Unit) -> bool:
        """Whether ``call`` sits in a branch of an ``if`` (or conditional expression) whose test differs between
        ranks, within its function (``key``) or module."""
        where = self.table[key].node if key is not None else unit.tree
        if id(where) not in self._parent_maps:
            self._parent_maps[id(where)] = {id(c): n for n in ast.walk(where) for c in ast.iter_child_nodes(n)}
        parents = self._parent_maps[id(where)]
        taint = self.func_taint.get(key, set()) if key is not None else self.module_taint
        node: ast.AST = call
        while id(node) in parents:
            parent = parents[id(node)]
            if isinstance(parent, (ast.If, ast.IfExp)) and node is not parent.test:
                if self.mentions_rank(parent.test, taint):
                    return True
            node = parent
        return False

    def called_only_under_rank_test(self, key: str) -> bool:
        """Whether the file calls function ``key``, and every call sits under a rank test: a pipeline stage's
        function (``if rank == 0: run_stage0(...)``) that not every rank runs."""
        if key not in self._rank_only_calls:
            sites = self._call_sites(key)
            self._rank_only_calls[key] = bool(sites) and all(self.under_rank_test(n, s, u) for n, s, u in sites)
        return self._rank_only_calls[key]

    def _call_sites(self, key: str) -> list[tuple[ast.Call, str | None, _Unit]]:
        """Every call of function ``key`` in the file: (the call, the scope it is in, its unit)."""
        sites = []
        for scope, nodes, unit in self._scopes():
            self_class = self._class_of(scope)
            for node in nodes:
                if isinstance(node, ast.Call) and _dotted(node.func) is not None:
                    target = self._callee(node.func, self_class, unit) or self._indirect(node.func, self_class, scope)
                    if target == key:
                        sites.append((node, scope, unit))
        return sites

    def called_only_under_no_grad(self, key: str, seen: frozenset[str] = frozenset()) -> bool:
        """Whether the file calls function ``key`` and every call runs with gradients off: inside ``with
        torch.no_grad()`` (or ``inference_mode``, a decorator of either), or in a function itself only called so
        (round 19: an ``evaluate`` that calls ``task_loss(model, ...)`` inside ``torch.no_grad()``, whose DDP
        forward issues nothing for a model without buffers)."""
        if key in self._no_grad_calls:
            return self._no_grad_calls[key]
        if key in seen:
            return False
        sites = self._call_sites(key)
        found = bool(sites) and all(
            "no_grad" in self.contexts.get(id(node), frozenset())
            or (scope is not None and self.called_only_under_no_grad(scope, seen | {key}))
            for node, scope, _ in sites
        )
        if not seen:
            self._no_grad_calls[key] = found
        return found

    def turned_off_by_constants(self, call: ast.Call, key: str) -> bool:
        """Whether every collective ``key`` makes or reaches sits under an ``if`` test on its parameters alone that
        the constants ``call`` passes make false, or in a call that passes them on to a function where they do
        (round 19: YOLOv5's ``create_dataloader(..., rank=-1)`` enters ``torch_distributed_zero_first(rank)``,
        whose barriers sit under ``local_rank not in (-1, 0)`` and ``local_rank == 0``: no barrier)."""
        given = self._constants_passed(call, key, {})
        if given:
            return self._off_with(key, given, 0)
        # no constant handed in: the callee's own calls may hand theirs (run_glue's ``evaluate()`` calls
        # ``load_and_cache_examples(args, evaluate=True)``, whose barriers sit under ``not evaluate``: round 31)
        if key not in self._off_alone:
            self._off_alone[key] = False  # a function reaching itself
            self._off_alone[key] = self._off_with(key, {}, 0)
        return self._off_alone[key]

    def _constants_passed(self, call: ast.Call, key: str, known: dict[str, object]) -> dict[str, object]:
        """The parameters of ``key`` that ``call`` passes a literal (or a name of ``known``, the caller's own
        constants) -> its value."""
        args = self.table[key].node.args
        positional = [a.arg for a in [*args.posonlyargs, *args.args]]
        skip = 1 if positional[:1] in (["self"], ["cls"]) else 0
        given: dict[str, object] = {}
        for name, value in [*zip(positional[skip:], call.args), *((k.arg, k.value) for k in call.keywords if k.arg)]:
            if isinstance(value, ast.Starred):
                break
            constant = known[value.id] if isinstance(value, ast.Name) and value.id in known else _constant(value)
            if constant is not _NOT_CONSTANT:
                given[name] = constant
        return given

    def _reaching_calls(self, func: _Func):
        """Each call of ``func`` that is or reaches a collective: (the call, what it is, the terms of the ``if``
        tests whose body it sits in, ``and`` split into its terms)."""
        parents = {id(c): n for n in ast.walk(func.node) for c in ast.iter_child_nodes(n)}
        for node in _own_nodes(func.node.body):
            if not isinstance(node, ast.Call):
                continue
            found = self.classify(node, func.unit, func.self_class, func.key)
            if found is None or (found.kind != "coll" and found.target not in self.reach):
                continue
            terms: list[ast.expr] = []
            child: ast.AST = node
            while id(child) in parents and parents[id(child)] is not func.node:
                parent = parents[id(child)]
                if isinstance(parent, ast.If) and any(child is b for b in parent.body):
                    test = parent.test
                    terms += test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
                elif isinstance(parent, ast.If) and any(child is b for b in parent.orelse):
                    terms.append(_negated(parent.test))  # ``if not distributed: ... else: gather(...)``
                child = parent
            yield node, found, terms

    def _off_with(self, key: str, given: dict[str, object], depth: int) -> bool:
        if depth > _MAX_DEPTH:
            return False
        reaching = 0
        for node, found, terms in self._reaching_calls(self.table[key]):
            reaching += 1
            if any(_false_with(t, given) for t in terms):
                continue
            if found.kind == "call" and found.target in self.table:
                passed = self._constants_passed(node, found.target, given)
                if passed and self._off_with(found.target, passed, depth + 1):
                    continue
            return False
        return reaching > 0

    def switched_off(self, call: ast.Call, key: str) -> bool:
        """Whether ``call`` of function ``key`` turns its collectives off: every collective of ``key`` (and
        every call of it that reaches one) sits under ``if <param>:`` for one parameter, and the call passes
        that parameter a false constant or leaves it at a false default (Megatron-LM's
        ``timer.start(barrier=False)``, whose ``start`` runs ``dist.barrier()`` only ``if barrier:``)."""
        gate = self._gate(key)
        if gate is None:
            return False
        name, position, default = gate
        func = self.table[key]
        skip = 1 if [a.arg for a in func.node.args.args[:1]] in (["self"], ["cls"]) else 0
        given: ast.expr | None = next((k.value for k in call.keywords if k.arg == name), None)
        if given is None and position is not None and 0 <= position - skip < len(call.args):
            given = call.args[position - skip]
            if any(isinstance(a, ast.Starred) for a in call.args[: position - skip + 1]):
                return False
        if given is None:
            if any(k.arg is None for k in call.keywords) or any(isinstance(a, ast.Starred) for a in call.args):
                return False  # ``**options`` may carry it
            given = default
        return isinstance(given, ast.Constant) and not given.value

    def _gate(self, key: str) -> tuple[str, int | None, ast.expr | None] | None:
        """(parameter, its position or None, its default) that gates every collective ``key`` makes or reaches,
        or None (see :meth:`switched_off`)."""
        if key in self._gates_of:
            return self._gates_of[key]
        self._gates_of[key] = None
        func = self.table[key]
        args = func.node.args
        positional = [*args.posonlyargs, *args.args]
        defaults: dict[str, ast.expr | None] = {a.arg: None for a in [*positional, *args.kwonlyargs]}
        for a, d in zip(positional[len(positional) - len(args.defaults) :], args.defaults):
            defaults[a.arg] = d
        for a, d in zip(args.kwonlyargs, args.kw_defaults):
            defaults[a.arg] = d
        common: set[str] | None = None
        for _node, _found, terms in self._reaching_calls(func):
            names = {t.id for t in terms if isinstance(t, ast.Name)}
            common = names if common is None else common & names
        for name in sorted(common or ()):
            if name in defaults:
                place = next((i for i, a in enumerate(positional) if a.arg == name), None)
                self._gates_of[key] = (name, place, defaults[name])
                break
        return self._gates_of[key]

    def _hook_function(self, arg: ast.expr, unit: _Unit, self_class: str | None, scope: str | None) -> str | None:
        """The function of the file a hook argument stands for: a function or method named
        (``self._on_forward``), one wrapped in ``functools.partial``, or the nested function a function of the
        file builds and returns (``self._hook(name)`` returning its inner ``hook``)."""
        if isinstance(arg, (ast.Name, ast.Attribute)):
            key = self._callee(arg, self_class, unit)
            return key if key is not None and not key.endswith(".__init__") else None
        if not isinstance(arg, ast.Call) or _dotted(arg.func) is None:
            return None
        if _terminal(arg.func) == "partial" and arg.args:
            return self._hook_function(arg.args[0], unit, self_class, scope)
        maker = self.table.get(
            self._callee(arg.func, self_class, unit) or self._indirect(arg.func, self_class, scope) or ""
        )
        if maker is None:
            return None
        nested = {n.name: n for n in maker.node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        for node in _own_nodes(maker.node.body):
            if isinstance(node, ast.Return) and isinstance(node.value, ast.Name) and node.value.id in nested:
                inner = next((f for f in self.funcs if f.node is nested[node.value.id]), None)
                if inner is not None and self.table.get(inner.key) is inner:
                    return inner.key
        return None

    def _module_hook(self, cls: str, method: str) -> tuple[str, str] | None:
        """(class, hook function) of a ``load_state_dict``/``state_dict`` hook that ``cls`` or a module it holds
        (``self.layer = ShardedLinear(...)``, followed through the classes of the file) registers on itself in
        one of its methods (``self.register_load_state_dict_pre_hook(...)``): calling ``method`` on an object of
        ``cls`` runs it. FSDP's full-state-dict pre-hook all-gathers the flat parameter: a ``load_state_dict``
        made on rank 0 alone waits there (round 25 of the real-world corpus)."""
        if self._module_hooks is None:
            self._module_hooks = {}
            for key, func in self.table.items():
                if func.self_class is None:
                    continue
                for node in ast.walk(func.node):
                    if not (
                        isinstance(node, ast.Call)
                        and isinstance(node.func, ast.Attribute)
                        and isinstance(node.func.value, ast.Name)
                        and node.func.value.id == "self"
                        and node.func.attr in _MODULE_HOOKS
                        and node.args
                    ):
                        continue
                    target = self._hook_function(node.args[0], func.unit, func.self_class, key)
                    if target is not None:
                        family = _MODULE_HOOKS[node.func.attr]
                        self._module_hooks.setdefault((func.self_class, family), target)
        seen: list[str] = []
        queue = [cls]
        while queue:
            name = queue.pop(0)
            if name in seen or len(seen) > 64:
                continue
            seen.append(name)
            for ancestor in self._ancestors(name):
                target = self._module_hooks.get((ancestor, method))
                if target is not None:
                    return ancestor, self._through_module_argument(target, ancestor)
                held = self.objects.get(f"class {ancestor}", {})
                queue += [b.local for b in held.values() if b.local]
        return None

    def _through_module_argument(self, hook: str, cls: str) -> str:
        """A module hook is handed the module as its first argument (a static method's ``module``): the method of
        ``cls`` it calls on it that reaches a collective (``module._full_flat()``), when the hook itself is not
        known to reach one; else the hook."""
        if hook in self.reach:
            return hook
        node = self.table[hook].node
        params = [a.arg for a in node.args.args]
        if not params:
            return hook
        first = params[1] if params[0] in ("self", "cls") and len(params) > 1 else params[0]
        for inner in ast.walk(node):
            if (
                isinstance(inner, ast.Call)
                and isinstance(inner.func, ast.Attribute)
                and isinstance(inner.func.value, ast.Name)
                and inner.func.value.id == first
            ):
                for ancestor in self._ancestors(cls):
                    method = f"{ancestor}.{inner.func.attr}"
                    if method in self.reach:
                        return method
        return hook

    def _registration(self, call: ast.Call, unit: _Unit, self_class: str | None, scope: str | None) -> _Call | None:
        """A call that hands over something that makes collectives later, when other code runs it: one of
        torch's DDP communication hooks given to ``register_comm_hook`` (DDP then runs it at every backward, in
        place of its own gradient all_reduce), or an object of a class of the file whose methods reach a
        collective added to a list or a registry (``callbacks.append(ThroughputMonitor())``,
        ``trainer.add_callback(...)``): a rank that skips the registration skips those collectives (rounds 21
        and 23 of the real-world corpus: a logging callback and an fp16 comm hook registered on rank 0 only)."""
        attr = call.func.attr  # type: ignore[attr-defined]
        values = [*call.args, *(k.value for k in call.keywords)]
        if attr == "register_comm_hook":
            hook = next(
                (k.value for k in call.keywords if k.arg == "hook"), call.args[1] if len(call.args) > 1 else None
            )
            if hook is not None and self._hook_function(hook, unit, self_class, scope) is None:
                named = _dotted(hook) or ""
                if self._resolve(hook, unit).startswith(_COMM_HOOKS) or _terminal(hook) in _TORCH_COMM_HOOKS:
                    return _Call(
                        "coll",
                        f"{_dotted(call.func) or attr}({named.rsplit('.', 1)[-1]})",
                        "torch.distributed.algorithms.ddp_comm_hooks",
                        "DDP runs the hook registered here at every backward, in place of its gradient all_reduce",
                    )
            return None
        if not _CALLBACK_REGISTRATION.fullmatch(attr):
            return None
        for value in values:
            if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)):
                continue
            cls = value.func.id
            if cls not in self.class_nodes:
                continue
            for ancestor in self._ancestors(cls):
                for key, func in self.table.items():
                    if func.self_class == ancestor and key in self.reach and not key.endswith(".__init__"):
                        shown = f"{_dotted(call.func) or attr}({cls}(...))"
                        note = (
                            f"in `{func.node.name}` of the {cls} registered here, run later by the code that holds it"
                        )
                        return _Call("call", shown, key, note)
        return None

    def _method_of_returned(
        self, func: ast.Attribute, unit: _Unit, self_class: str | None, scope: str | None
    ) -> str | None:
        """The method of the file ``func`` names on an object a call hands back (``timers("fwd").start(...)``,
        ``get_logger().flush()``), when the class of that object is known (see :meth:`_returned_class`)."""
        if not isinstance(func.value, ast.Call):
            return None
        cls = self._returned_class(func.value, unit, self_class, scope)
        for name in self._ancestors(cls) if cls else ():
            if f"{name}.{func.attr}" in self.table:
                return f"{name}.{func.attr}"
        return None

    def _returned_class(
        self, call: ast.Call, unit: _Unit, self_class: str | None, scope: str | None, depth: int = 0
    ) -> str | None:
        """The class of the file whose object ``call`` hands back: the class itself called (``Timer()``), or a
        function or method of the file whose every return is an object of one class of the file — one it
        builds, one a name or ``self.`` attribute holds, or one out of a dict or list filled with them
        (Megatron-LM's ``get_timers()`` and ``Timers.__call__``, which returns ``self._timers[name]``)."""
        written = _dotted(call.func)
        if written is None or depth > 4:
            return None
        if _terminal(call.func) in self.bases and not written.startswith("self."):
            return _terminal(call.func)
        target = self._callee(call.func, self_class, unit) or self._indirect(call.func, self_class, scope)
        func = self.table.get(target or "")
        if func is None or func.key.endswith(".__init__"):
            return None
        if func.key not in self._return_classes:
            self._return_classes[func.key] = None  # a function that returns its own call's result stops here
            classes = set()
            for node in _own_nodes(func.node.body):
                if isinstance(node, ast.Return) and node.value is not None:
                    if isinstance(node.value, ast.Constant) and node.value.value is None:
                        continue
                    classes.add(self._held_class(node.value, func, depth + 1))
            self._return_classes[func.key] = classes.pop() if len(classes) == 1 else None
        return self._return_classes[func.key]

    def _held_class(self, value: ast.expr, func: _Func, depth: int) -> str | None:
        """The class of the file of the object ``value`` (returned by ``func``) holds, or None."""
        if depth > 4:
            return None
        if isinstance(value, ast.Call):
            if _terminal(value.func) == "setdefault" and len(value.args) == 2:  # ``self._t.setdefault(k, Timer())``
                return self._held_class(value.args[1], func, depth + 1)
            return self._returned_class(value, func.unit, func.self_class, func.key, depth + 1)
        if isinstance(value, ast.Subscript):
            return self._filled_class(value.value, func, depth)
        written = _dotted(value)
        if written is None:
            return None
        built = self._constructed(written, func.key, func.self_class)
        if built is not None and built.local is not None:
            return built.local
        if isinstance(value, ast.Name):  # ``timer = self._timers[name]; return timer``
            held = {
                self._held_class(v, func, depth + 1)
                for names, v, index in _assignments(_own_nodes(func.node.body))
                if index is None and value.id in names
            }
            return held.pop() if len(held) == 1 else None
        return None

    def _filled_class(self, container: ast.expr, func: _Func, depth: int) -> str | None:
        """The class of the file of every object stored into ``container[...]`` (a dict or list of the
        function's class, of the module, or of the function), or None when they differ or none is found."""
        written = _dotted(container)
        if written is None:
            return None
        built = self._constructed(f"{written}[]", func.key, func.self_class)
        if built is not None and built.local is not None:
            return built.local
        if self._stored is None:  # ``container[key] = call`` in every function of the file, by container
            self._stored = {}
            for place in self.funcs:
                for node in _own_nodes(place.node.body):
                    if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                        for t in node.targets:
                            if isinstance(t, ast.Subscript) and _dotted(t.value):
                                self._stored.setdefault(_dotted(t.value), []).append((place, node.value))  # type: ignore[arg-type]
        owners = set(self._ancestors(func.self_class)) if func.self_class else set()
        classes = {
            self._returned_class(value, place.unit, place.self_class, place.key, depth + 1)
            for place, value in self._stored.get(written, [])
            if not written.startswith("self.") or place.self_class in owners
        }
        return classes.pop() if len(classes) == 1 else None

    def _indirect(self, func: ast.expr, self_class: str | None, scope: str | None) -> str | None:
        """The function of the file a call reaches indirectly: a method of an object built from a class of the
        file (``monitor = LayerMonitor(...)``; ``monitor.gather()``), or a function of the file handed over as an
        argument and called through the parameter or the ``self.`` attribute that keeps it
        (``LayerMonitor(gather_fn=all_gather_objects)``; ``self._gather_fn(...)``)."""
        held = _dotted(func.value) if isinstance(func, ast.Attribute) else None
        if held is not None and (
            (isinstance(func.value, ast.Name) and held not in ("self", "cls"))
            or (held.startswith("self.") and held.count(".") == 1 and self_class)  # ``self.meter.sync()``
        ):
            built = self._constructed(held, scope, self_class)
            if built is not None and built.local is not None:
                methods = self._element_methods(built, func.attr)
                # an element of a list of objects of several classes: the method that reaches a collective, once
                # that is known (:meth:`_prepare_reach` follows every one)
                return next((m for m in methods if m in self.reach), methods[0] if methods else None)
        name = _dotted(func)
        if name is None:
            return None
        if isinstance(func, ast.Name) or (name.startswith("self.") and name.count(".") == 1):
            # an object of a class of the file called like a torch module (``model(ids)``): nn.Module.__call__
            # runs its forward (a ZeRO-3-style forward that all-gathers its parameters)
            built = self._constructed(name, scope, self_class)
            if built is not None and built.local is not None:
                for cls in self._ancestors(built.local):
                    for method in ("__call__", "forward"):
                        if f"{cls}.{method}" in self.table:
                            return f"{cls}.{method}"
        if isinstance(func, ast.Name) and scope is not None:
            return self.passed.get((scope, name))
        if name.startswith("self.") and name.count(".") == 1 and self_class:
            for cls in self._ancestors(self_class):
                if (cls, name) in self.kept:
                    return self.kept[(cls, name)]
        return None

    def _element_methods(self, built: _Built, attr: str) -> list[str]:
        """The methods ``attr`` of the file an object ``built`` may run: of its class, or of any class of its
        alternatives (see :meth:`_object_list`), nearest definition first."""
        methods = []
        for local in (built.local, *built.alternatives):
            for cls in self._ancestors(local) if local else ():
                if f"{cls}.{attr}" in self.table:
                    if f"{cls}.{attr}" not in methods:
                        methods.append(f"{cls}.{attr}")
                    break
        return methods

    def _prepare_callbacks(self) -> None:
        """Functions of the file passed as arguments: ``passed[(function, parameter)]`` is the function a call
        hands to that parameter (the first found), ``kept[(class, "self.x")]`` the one a method keeps in
        ``self.x = parameter``."""
        for key, nodes, unit in self._scopes():
            self_class = self._class_of(key)
            for node in nodes:
                if not isinstance(node, ast.Call):
                    continue
                callee = self._callee(node.func, self_class, unit)
                if callee is None:
                    continue
                params = [a.arg for a in self.table[callee].node.args.args]
                skip = 1 if params[:1] in (["self"], ["cls"]) else 0
                bound = list(zip(params[skip:], node.args)) + [(k.arg, k.value) for k in node.keywords if k.arg]
                for param, arg in bound:
                    target = self._callee(arg, self_class, unit) if isinstance(arg, (ast.Name, ast.Attribute)) else None
                    if target is not None and param in params:
                        self.passed.setdefault((callee, param), target)
        for func in self.table.values():
            if func.self_class is None:
                continue
            for node in _own_nodes(func.node.body):
                if (
                    isinstance(node, ast.Assign)
                    and isinstance(node.value, ast.Name)
                    and (func.key, node.value.id) in self.passed
                ):
                    for name in (n for t in node.targets for n in _target_names(t) if n.startswith("self.")):
                        self.kept.setdefault((func.self_class, name), self.passed[(func.key, node.value.id)])

    def _constructed(self, name: str | None, scope: str | None, self_class: str | None) -> _Built | None:
        """What ``name`` was built by, if it was assigned from a constructor call in ``scope`` (or the module),
        is a ``self.`` attribute so assigned in a method of the class, or a parameter of ``scope`` that every
        call of it in the file passes such an object."""
        if not name:
            return None
        if name.endswith("[]") and not name[:-2]:
            return None
        if name.startswith("self.") and self_class:
            for cls in self._ancestors(self_class):
                if name in self.objects.get(f"class {cls}", {}):
                    return self.objects[f"class {cls}"][name]
        for key in (scope, None):
            if name in self.objects.get(key, {}):
                return self.objects[key][name]
        return None

    def _prepare_objects(self) -> None:
        """Which names hold an object built by a call: ``name -> _Built`` per scope, ``self.x`` per class
        (under ``"class NAME"``), and the parameters of functions of the file that are passed such an object
        (a fixpoint, as for DDP models), for the table's ``constructors``."""
        scopes = self._scopes()
        for key, nodes, unit in scopes:
            assigns = [n for n in nodes if isinstance(n, ast.Assign)]
            for names, value, index in _assignments(assigns):  # a, b = A(), B() pairs each name with its call
                held = _held_calls(value) if index is None else None
                if held:  # a dict or list of objects (``{"acc": Accuracy(...)}``): ``d[k]`` is one of them
                    builts = [self._built(c, unit) for c in held]
                    if len({b.classes[0].rpartition(".")[0] for b in builts}) == 1:
                        cls = self._class_of(key)
                        for name in names:
                            where = f"class {cls}" if name.startswith("self.") and cls else key
                            self.objects.setdefault(where, {})[f"{name}[]"] = builts[0]
                    continue
                if index is not None or not isinstance(value, ast.Call) or _dotted(value.func) is None:
                    continue
                if self._resolve(value.func, unit) in _DATACLASS_COPIES:
                    continue  # a copy of its first argument, of the same class: see _prepare_dataclass_copies
                built = self._built(value, unit)
                for name in names:
                    cls = self._class_of(key)
                    where = f"class {cls}" if name.startswith("self.") and cls else key
                    self.objects.setdefault(where, {})[name] = built
        for key, nodes, _unit in scopes:  # ``for _, meter in self.meters.items()``: an element of the container
            self_class = self._class_of(key)
            for loop in (n for n in nodes if isinstance(n, (ast.For, ast.comprehension))):
                source, target = loop.iter, loop.target
                if isinstance(source, ast.Call) and isinstance(source.func, ast.Attribute) and not source.args:
                    if source.func.attr == "items" and isinstance(target, ast.Tuple) and len(target.elts) == 2:
                        source, target = source.func.value, target.elts[1]
                    elif source.func.attr == "values":
                        source = source.func.value
                    else:
                        continue
                elif isinstance(source, ast.Call):
                    continue
                held = self._constructed(f"{_dotted(source)}[]", key, self_class) if _dotted(source) else None
                if held is not None and isinstance(target, ast.Name):
                    self.objects.setdefault(key, {}).setdefault(target.id, held)
        for _ in range(5):
            changed = self._flow_object_lists(scopes)
            for key, nodes, unit in scopes:
                self_class = self._class_of(key)
                for node in nodes:
                    if not isinstance(node, ast.Call):
                        continue
                    callee = self._callee(node.func, self_class, unit)
                    if callee is None and isinstance(node.func, ast.Attribute) and _dotted(node.func):
                        callee = self._indirect(node.func, self_class, key)  # ``trainer.fit(module)``
                    if callee is None and isinstance(node.func, ast.Attribute):
                        callee = self._method_of_built(node.func)  # ``Trainer(logger).fit(module)``
                    if callee is None:
                        continue
                    params = [a.arg for a in self.table[callee].node.args.args]
                    skip = 1 if params[:1] in (["self"], ["cls"]) else 0
                    bound = list(zip(params[skip:], node.args)) + [(k.arg, k.value) for k in node.keywords if k.arg]
                    for param, arg in bound:
                        if isinstance(arg, (ast.List, ast.Tuple)) and param in params:
                            held = self._object_list(arg, key, self_class)
                            if held is not None and f"{param}[]" not in self.objects.get(callee, {}):
                                self.objects.setdefault(callee, {})[f"{param}[]"] = held
                                changed = True
                            continue
                        built = self._constructed(_dotted(arg), key, self_class)
                        if built is None and isinstance(arg, ast.Call) and _terminal(arg.func) in self.bases:
                            built = self._built(arg, unit)  # an object of a class of the file, built in place
                        if built is None and isinstance(arg, ast.Name) and arg.id == "self":
                            built = self._held_object(arg, key, self_class)  # ``cb.on_batch_end(self, ...)``
                        if built is not None and param in params and param not in self.objects.get(callee, {}):
                            self.objects.setdefault(callee, {})[param] = built
                            changed = True
            if not changed:
                break
        returned = [  # ``timer = get_timer("fwd")``: an object of a class of the file, handed back by a call
            (key, unit, names, value)
            for key, nodes, unit in scopes
            for names, value, index in _assignments(n for n in nodes if isinstance(n, ast.Assign))
            if index is None and isinstance(value, ast.Call) and _terminal(value.func) not in self.bases
        ]
        for _ in range(3 if returned else 0):  # ``timers = get_timers()`` then ``timer = timers("fwd")``, any order
            self._return_classes.clear()
            for key, unit, names, value in returned:
                self_class = self._class_of(key)
                cls = self._returned_class(value, unit, self_class, key)
                if cls is None:
                    continue
                classes = (cls, *(b for c in self._ancestors(cls) for b in self.base_names.get(c, [])))
                for name in names:
                    where = f"class {self_class}" if name.startswith("self.") and self_class else key
                    self.objects.setdefault(where, {})[name] = _Built(classes, cls)
        self._return_classes.clear()
        self._prepare_dataclass_copies(scopes)
        self._prepare_metric_states()

    def _prepare_dataclass_copies(self, scopes: list[tuple[str | None, list[ast.AST], _Unit]]) -> None:
        """``b = dataclasses.replace(a, ...)``: ``b`` is an object of ``a``'s class (when lint knows it), unless the
        scope already knows ``b`` (a parameter handed such an object, then rebound to its copy)."""
        for key, nodes, unit in scopes:
            self_class = self._class_of(key)
            for names, value, index in _assignments(n for n in nodes if isinstance(n, ast.Assign)):
                if index is not None or not isinstance(value, ast.Call) or not value.args:
                    continue
                if self._resolve(value.func, unit) not in _DATACLASS_COPIES or _dotted(value.args[0]) is None:
                    continue
                built = self._constructed(_dotted(value.args[0]), key, self_class)
                for name in names if built is not None else ():
                    where = f"class {self_class}" if name.startswith("self.") and self_class else key
                    self.objects.setdefault(where, {}).setdefault(name, built)

    def _dataclass(self, cls: str) -> bool:
        """Whether the class ``cls`` of the file is decorated ``@dataclass`` / ``@dataclasses.dataclass(...)``."""
        node, _unit = self.class_nodes[cls]
        return any(
            _dotted(d.func if isinstance(d, ast.Call) else d) in _DATACLASS_DECORATORS for d in node.decorator_list
        )

    def _dataclass_init(self, call: ast.Call, unit: _Unit, self_class: str | None, scope: str | None) -> _Call | None:
        """A call that builds an object of a ``@dataclass`` of the file whose ``__post_init__`` the generated
        ``__init__`` runs: the class called (``ParallelDims(...)``, when the class writes no ``__init__`` of its
        own) or ``dataclasses.replace(dims, ...)`` of an object of such a class (see :data:`_DATACLASS_COPIES`)."""
        cls, shown = None, _dotted(call.func) or ""
        if isinstance(call.func, ast.Name) and call.func.id in self.class_nodes:
            cls = call.func.id
        elif self._resolve(call.func, unit) in _DATACLASS_COPIES and call.args and _dotted(call.args[0]):
            built = self._constructed(_dotted(call.args[0]), scope, self_class)
            cls = built.local if built is not None else None
        if cls is None or cls not in self.class_nodes:
            return None
        for c in self._ancestors(cls):
            if f"{c}.__init__" in self.table:
                return _Call("call", shown, f"{c}.__init__") if shown != cls else None
            if f"{c}.__post_init__" in self.table and c in self.class_nodes and self._dataclass(c):
                how = "builds a new" if shown != cls else "builds a"
                note = f"`{shown}()` {how} {cls} through the __init__ @dataclass writes, which runs {c}.__post_init__"
                return _Call("call", shown, f"{c}.__post_init__", note)
        return None

    def _method_of_built(self, func: ast.Attribute) -> str | None:
        """The method ``func`` names on an object of a class of the file built in place (``Trainer(...).fit``)."""
        made = func.value
        if not (isinstance(made, ast.Call) and isinstance(made.func, ast.Name) and made.func.id in self.bases):
            return None
        return next(
            (f"{c}.{func.attr}" for c in self._ancestors(made.func.id) if f"{c}.{func.attr}" in self.table), None
        )

    def _object_list(self, value: ast.expr, scope: str | None, self_class: str | None) -> _Built | None:
        """An element of a list or tuple literal every element of which is an object of a class of the file, built
        in place or held by a name (``[wandb_logger, StdOutLogger(accelerator)]``): the first element's class,
        with the classes of the others as its alternatives; None for anything else."""
        if not isinstance(value, (ast.List, ast.Tuple)) or not value.elts:
            return None
        locals_: list[str] = []
        for element in value.elts:
            if isinstance(element, ast.Call) and _terminal(element.func) in self.bases:
                cls = _terminal(element.func)
            else:
                built = self._constructed(_dotted(element), scope, self_class)
                if built is None or built.local is None:
                    return None
                cls = built.local
            if cls not in locals_:
                locals_.append(cls)
        classes = (locals_[0], *(b for c in self._ancestors(locals_[0]) for b in self.base_names.get(c, [])))
        return _Built(classes, locals_[0], alternatives=tuple(locals_[1:]))

    def _held_object(self, value: ast.expr, scope: str | None, self_class: str | None) -> _Built | None:
        """The object of a class of the file ``value`` is: built in place (``Zero3Params(module)``), or held by a
        name or ``self.`` attribute (see :meth:`_constructed`); None for anything else."""
        if isinstance(value, ast.Call) and _terminal(value.func) in self.bases and _dotted(value.func):
            cls = _terminal(value.func)
            return _Built((cls, *(b for c in self._ancestors(cls) for b in self.base_names.get(c, []))), cls)
        if isinstance(value, ast.Name) and value.id == "self" and self_class in self.bases:
            # ``module.trainer = self`` in a method of Trainer: the object of the method's own class
            return _Built(
                (self_class, *(b for c in self._ancestors(self_class) for b in self.base_names.get(c, []))), self_class
            )
        if isinstance(value, (ast.Name, ast.Attribute)):
            built = self._constructed(_dotted(value), scope, self_class)
            if built is not None and built.local is not None:
                return built
        return None

    def _chain_class(self, dotted: str, scope: str | None, self_class: str | None) -> str | None:
        """The class of the file of the object a dotted name reaches through objects of the file's classes
        (``model.prompt_encoder``: ``model`` holds a ``PromptTuningModel``, whose ``self.prompt_encoder`` holds a
        ``PromptEncoder``), or None."""
        head, *rest = dotted.split(".")
        if head in ("self", "cls"):
            if not rest or not self_class:
                return None
            head, rest = f"self.{rest[0]}", rest[1:]
        built = self._constructed(head, scope, self_class)
        cls = built.local if built is not None else None
        for attr in rest:
            if cls is None:
                return None
            built = self._constructed(f"self.{attr}", None, cls)
            cls = built.local if built is not None else None
        return cls

    def _flow_object_lists(self, scopes: list[tuple[str | None, list[ast.AST], _Unit]]) -> bool:
        """One round of following lists of objects of the file's classes (see :meth:`_object_list`): a name or
        ``self.`` attribute assigned such a list, or a name that holds one (``self.loggers = loggers`` for a
        parameter passed ``[WandbLogger(a), StdOutLogger(a)]``), holds its elements; the target of a ``for`` over
        it holds one of them. True when something new was found."""
        changed = False
        for key, nodes, _unit in scopes:
            self_class = self._class_of(key)
            for names, value, index in _assignments(n for n in nodes if isinstance(n, ast.Assign)):
                if index is not None:
                    continue
                held = self._object_list(value, key, self_class)
                if held is None and isinstance(value, (ast.Name, ast.Attribute)) and _dotted(value):
                    held = self._constructed(f"{_dotted(value)}[]", key, self_class)
                if held is not None and (held.alternatives or not _held_calls(value)):
                    for name in names:
                        where = f"class {self_class}" if name.startswith("self.") and self_class else key
                        if f"{name}[]" not in self.objects.get(where, {}):
                            self.objects.setdefault(where, {})[f"{name}[]"] = held
                            changed = True
                one = self._held_object(value, key, self_class)
                if one is None and isinstance(value, ast.Name) and all(n.startswith("self.") for n in names):
                    # ``self.optimizer = optimizer`` of a parameter every call passes a library's object (round 37's
                    # MMF loop is handed a ZeroRedundancyOptimizer): the attribute holds it too
                    one = self._constructed(value.id, key, self_class)
                if one is None:
                    continue
                for name in names:  # ``self.model = model`` of a parameter passed a model of the file
                    where = f"class {self_class}" if name.startswith("self.") and self_class else key
                    if "." in name and not name.startswith("self."):  # ``model.encoder.zero = Zero3Params(...)``
                        owner = self._chain_class(name.rpartition(".")[0], key, self_class)
                        where, name = (f"class {owner}", f"self.{name.rpartition('.')[2]}") if owner else (None, "")
                    if where is not None and name and name not in self.objects.get(where, {}):
                        self.objects.setdefault(where, {})[name] = one
                        changed = True
            for loop in (n for n in nodes if isinstance(n, (ast.For, ast.comprehension))):
                if not isinstance(loop.target, ast.Name) or _dotted(loop.iter) is None:
                    continue
                held = self._constructed(f"{_dotted(loop.iter)}[]", key, self_class)
                if held is not None and loop.target.id not in self.objects.get(key, {}):
                    self.objects.setdefault(key, {})[loop.target.id] = held
                    changed = True
        return changed

    def _built(self, call: ast.Call, unit: _Unit) -> _Built:
        """The classes a constructor call builds (for a class of the file, also the imported bases of it and
        of its ancestors) and the keywords it is given (a class of the file's ``super().__init__(...)``
        keywords count too, the call's own win)."""
        name = self._resolve(call.func, unit)
        classes, options = [name], {}
        local = _terminal(call.func)
        if local not in self.bases and name in self.bases:  # a class of a followed module (``_helpers.Stats``)
            local = name
        if local in self.bases:
            for cls in self._ancestors(local):
                classes += self.base_names.get(cls, [])
                init = self.table.get(f"{cls}.__init__")
                for node in ast.walk(init.node) if init is not None else ():
                    if (
                        isinstance(node, ast.Call)
                        and _terminal(node.func) == "__init__"
                        and isinstance(node.func, ast.Attribute)
                        and isinstance(node.func.value, ast.Call)
                        and _terminal(node.func.value.func) == "super"
                    ):
                        options.update({k.arg: k.value for k in node.keywords if k.arg and k.arg not in options})
        options.update({k.arg: k.value for k in call.keywords if k.arg})
        if name in _LOADERS and call.args and "dataset" not in options:
            options["dataset"] = call.args[0]
        return _Built(tuple(classes), local if local in self.bases else None, options)

    def share_evenness(self, built: _Built) -> bool | None:
        """For an object of a sampler class of the file that hands rank ``r`` the items ``seq[r::world]``: True
        when ``seq``'s length is a multiple of the world size (padded, or cut to ``len - len % world`` without
        a condition, or under ``if self.<flag>:`` that this object was built with true), False when it is not
        (no padding and no cut, or the cut's flag built false: a custom sampler's ``drop_last=False`` that does
        not pad as torch's DistributedSampler does), None when the class is not of that shape or lint cannot
        tell (a flag passed positionally or computed)."""
        if built.local is None or self._sampler_class(built.local):
            return None
        methods = [f for f in self.funcs if f.self_class in self._ancestors(built.local)]
        nodes = [n for f in methods for n in ast.walk(f.node)]
        if not any(_rank_stride(n) for n in nodes if isinstance(n, ast.Subscript)):
            return None
        if any(_pads(n) for n in nodes):
            return True
        cuts = [n for n in nodes if isinstance(n, ast.Subscript) and _world_cut(n)]
        if not cuts:
            return False
        parents = {id(c): n for n in nodes for c in ast.iter_child_nodes(n)}
        flags = []
        for cut in cuts:
            node: ast.AST = cut
            guard = None
            while id(node) in parents:
                node = parents[id(node)]
                if isinstance(node, ast.If):
                    guard = node.test
                    break
            if guard is None:
                return True  # cut on every path
            if not (
                isinstance(guard, ast.Attribute) and isinstance(guard.value, ast.Name) and guard.value.id == "self"
            ):
                return None
            flags.append(guard.attr)
        init = self.table.get(f"{built.local}.__init__")
        if init is None or len(set(flags)) != 1:
            return None
        param = next(
            (
                v.id
                for n in ast.walk(init.node)
                if isinstance(n, ast.Assign)
                for t, v in _paired_targets(n)
                if isinstance(t, ast.Attribute) and t.attr == flags[0] and isinstance(v, ast.Name)
            ),
            None,
        )
        if param is None:
            return None
        value = built.options.get(param)
        if value is None:
            args = init.node.args
            defaults = dict(zip([a.arg for a in args.args][len(args.args) - len(args.defaults) :], args.defaults))
            value = defaults.get(param)
        if not isinstance(value, ast.Constant):
            return None
        return bool(value.value)

    def _prepare_metric_states(self) -> None:
        """For each torchmetrics metric class of the file, its list states that torchmetrics gathers one element
        at a time: ``self.add_state(name, default=[], dist_reduce_fx=...)`` with a reduction other than
        ``"cat"`` (None, the default, too): ``_sync_dist`` concatenates only ``dim_zero_cat`` lists first."""
        for cls, (node, unit) in self.class_nodes.items():
            names = [n for c in self._ancestors(cls) for n in self.base_names.get(c, [])]
            if not any(n == "torchmetrics" or n.startswith("torchmetrics.") for n in names):
                continue
            for call in ast.walk(node):
                if not (
                    isinstance(call, ast.Call)
                    and _terminal(call.func) == "add_state"
                    and isinstance(call.func, ast.Attribute)
                    and _dotted(call.func.value) == "self"
                ):
                    continue
                name, default = _argument(call, 0, "name"), _argument(call, 1, "default")
                reduce = _argument(call, 2, "dist_reduce_fx")
                is_list = isinstance(default, ast.List) or (
                    isinstance(default, ast.Call) and _terminal(default.func) == "list" and not default.args
                )
                by_cat = (isinstance(reduce, ast.Constant) and reduce.value == "cat") or (
                    reduce is not None and _terminal(reduce) == "dim_zero_cat"
                )
                if is_list and not by_cat and isinstance(name, ast.Constant) and isinstance(name.value, str):
                    self.list_states.setdefault(cls, []).append((name.value, call.lineno + unit.offset))

    def per_element_states(self, built: _Built | None) -> str | None:
        """The list states of a metric that torchmetrics gathers one element at a time, in words, or None."""
        if built is None:
            return None
        if built.local is not None:
            found = [s for c in self._ancestors(built.local) for s in self.list_states.get(c, [])]
            if found:
                return ", ".join(f"`{name}` (dist_reduce_fx not 'cat', line {line})" for name, line in found)
        for cls in built.classes:
            if cls.startswith("torchmetrics.") and cls.rpartition(".")[2] in PER_ELEMENT_METRICS:
                return f"{PER_ELEMENT_METRICS[cls.rpartition('.')[2]]} of torchmetrics' {cls.rpartition('.')[2]}"
        return None

    def _framework(
        self, call: ast.Call, unit: _Unit, self_class: str | None, scope: str | None = None
    ) -> FrameworkCollective | None:
        func = call.func
        called = self._constructed(_dotted(func), scope, self_class)
        if called is not None:  # the object itself is called: its forward
            entry = self._match(self.frameworks.get("forward", []), call, "", "", called)
            if entry is not None:
                return entry
        if isinstance(func, ast.Attribute):
            entries = self.frameworks.get(func.attr, [])
            if not entries:
                return None
            receiver = func.value
            full = self._resolve(receiver, unit) if _dotted(receiver) else ""
            built = self._constructed(_dotted(receiver), scope, self_class)
            if built is None and isinstance(receiver, ast.Subscript) and _dotted(receiver.value):
                built = self._constructed(f"{_dotted(receiver.value)}[]", scope, self_class)
            last = _terminal(receiver).lower()
            if last == "self" and self_class:
                bases = set(self._ancestors(self_class))
                entry = next((e for e in entries if e.self_bases & bases and self._keyword_on(e, call)), None)
                if entry is not None:
                    return entry
            return self._match(entries, call, last, full, built)
        if isinstance(func, ast.Name):
            module, _, name = self._resolve(func, unit).rpartition(".")
            return next((e for e in self.frameworks.get(name, []) if module and module in e.modules), None)
        return None

    def _match(
        self, entries: list[FrameworkCollective], call: ast.Call, last: str, full: str, built: _Built | None
    ) -> FrameworkCollective | None:
        for entry in entries:
            if not self._keyword_on(entry, call):
                continue
            if not (entry.receivers or entry.modules or entry.self_bases or entry.constructors):
                return entry
            if (last and last in entry.receivers) or (full and full in entry.modules):
                return entry
            if built is not None and any(
                cls == c or cls.startswith(c + ".") for cls in built.classes for c in entry.constructors
            ):
                if entry.option is None or _switched_on(built.options.get(entry.option[0]), entry.option[1]):
                    return entry
        return None

    @staticmethod
    def _keyword_on(entry: FrameworkCollective, call: ast.Call) -> bool:
        """Whether the call passes the entry's ``keyword`` (if it needs one) and not its ``unless``."""
        given = {k.arg: k.value for k in call.keywords if k.arg}
        if entry.keyword is not None and not _switched_on(given.get(entry.keyword), False):
            return False
        return entry.unless is None or not _switched_on(given.get(entry.unless), False)

    def _ddp_op(self, call: ast.Call, unit: _Unit, scope: str | None) -> _Call | None:
        ddp = self.ddp.get(scope, {})
        if not ddp:
            return None
        ctx = self.contexts.get(id(call), frozenset())
        written = _dotted(call.func) or ""
        if written in ddp:
            kind = ddp[written]
            no_grad = "no_grad" in ctx or (scope is not None and self.called_only_under_no_grad(scope))
            if "join" in ctx or (kind == "ddp" and no_grad and not self.has_buffers):
                return None
            if kind == "fsdp":
                return _Call(
                    "coll",
                    f"{written}() (FSDP forward)",
                    f"fsdp.forward.{written}",
                    "FSDP's forward all-gathers the sharded parameters",
                )
            return _Call(
                "coll",
                f"{written}() (DDP forward)",
                f"ddp.forward.{written}",
                "DDP's forward issues collectives only at some calls: if the module has buffers, it broadcasts "
                "them at its first forward after it was built and at every forward that follows a synchronised "
                "training forward (`forward_sync_buffers`, formerly `broadcast_buffers`, on by default), and its "
                "first grad-enabled forward after the first backward rebuilds the gradient buckets with two "
                "broadcasts (not with `find_unused_parameters=True` unless `static_graph=True`)",
            )
        if (
            isinstance(call.func, ast.Attribute)
            and call.func.attr == "backward"
            and "join" not in ctx
            and ("no_sync" not in ctx or not self._forward_in_block(call))
        ):
            if self._ddp_output(call.func.value, ddp, self.ddp_values.get(scope, set())):
                receiver = unit.text(call.func.value)
                receiver = receiver if len(receiver) <= 30 else "loss"
                return _Call(
                    "coll",
                    f"{receiver}.backward() (DDP backward)",
                    "ddp.backward",
                    "DDP's backward all-reduces the gradients, issued from C++",
                )
        return None

    def _forward_in_block(self, call: ast.Call) -> bool:
        """Whether the loss ``call`` (``loss.backward()``) runs backward through was made inside the same
        ``no_sync()`` block: the forward decides whether DDP all-reduces (``no_sync``'s docstring: "The forward
        pass should be included inside the context manager, or else gradients will still be synchronized";
        review41b). A loss made by a call in the block's body, or a backward of an expression, counts as made
        there; a name the block does not assign was made outside it."""
        block = self.no_sync_blocks.get(id(call))
        value = call.func.value  # type: ignore[attr-defined]
        if block is None or not isinstance(value, ast.Name):
            return True
        return any(
            isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign))
            and value.id
            in {n for t in (node.targets if isinstance(node, ast.Assign) else [node.target]) for n in _target_names(t)}
            for stmt in block.body  # type: ignore[attr-defined]
            for node in ast.walk(stmt)
        )

    def _callee(self, func: ast.expr, self_class: str | None, unit: _Unit | None = None) -> str | None:
        """The key of the function of the file (or of a followed module) that ``func`` calls."""
        if isinstance(func, ast.Name):
            names = [func.id]
            if unit is not None and unit.prefix:
                names.insert(0, f"{unit.prefix}.{func.id}")
            if unit is not None and func.id in unit.aliases:
                names.append(unit.aliases[func.id])
            for name in names:
                for key in (name, *(f"{c}.__init__" for c in self._ancestors(name))):
                    if key in self.table:
                        return key
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            if func.attr == "apply" and func.value.id in self.class_nodes and self._autograd_function(func.value.id):
                # ``_Gather.apply(x)``: torch runs the Function's forward (its backward runs in the backward pass)
                for cls in self._ancestors(func.value.id):
                    if f"{cls}.forward" in self.table:
                        return f"{cls}.forward"
            if func.value.id in self.class_nodes and func.value.id not in ("self", "cls"):
                for cls in self._ancestors(func.value.id):  # ``Comm.barrier()``: a static or class method
                    if f"{cls}.{func.attr}" in self.table:
                        return f"{cls}.{func.attr}"
            if func.value.id in ("self", "cls") and self_class:
                for cls in self._ancestors(self_class):
                    if f"{cls}.{func.attr}" in self.table:
                        return f"{cls}.{func.attr}"
            elif unit is not None and func.value.id in unit.aliases and self.followed:
                key = self._resolve(func, unit)
                if key in self.table and self.table[key].unit.prefix:
                    return key
        return None

    def _autograd_function(self, cls: str) -> bool:
        """Whether a class of the file derives from ``torch.autograd.Function``."""
        return any(
            base in ("torch.autograd.Function", "torch.autograd.function.Function")
            for c in self._ancestors(cls)
            for base in self.base_names.get(c, [])
        )

    def _resolve(self, node: ast.expr, unit: _Unit) -> str:
        """The dotted name of ``node`` through the file's imports (``dist.barrier`` ->
        ``torch.distributed.barrier``, ``comm`` -> ``detectron2.utils.comm``)."""
        dotted = _dotted(node) or ""
        head, _, rest = dotted.partition(".")
        base = unit.aliases.get(head)
        if base is None and unit.namespace is not None and head in unit.namespace:
            base = _object_name(unit.namespace[head])
        if base is None:
            base = "torch.distributed" if head == "dist" else head
        return f"{base}.{rest}" if rest else base

    def _collective(self, func: ast.expr, unit: _Unit) -> str | None:
        full = self._resolve(func, unit)
        for old, new in (
            ("torch.distributed.distributed_c10d.", "torch.distributed."),
            ("torch.distributed.checkpoint.state_dict_saver.", "torch.distributed.checkpoint."),
            ("torch.distributed.checkpoint.state_dict_loader.", "torch.distributed.checkpoint."),
        ):
            if full.startswith(old):
                full = new + full[len(old) :]
        prefix, _, name = full.rpartition(".")
        if prefix == "torch.distributed" and name in COLLECTIVES:
            return full
        if full == _STORE_BARRIER:  # every rank adds, the last sets, all wait: a barrier through the store
            return full
        if prefix == "torch.distributed.checkpoint" and name in CHECKPOINT_COLLECTIVES:
            return full
        if name in WRAPPERS:
            return f"wrapper.{name}"
        if isinstance(func, ast.Attribute) and func.attr in WRAPPERS:  # on a receiver made in place: PartialState()
            return f"wrapper.{func.attr}"
        return None

    # -- rank dependence

    def mentions_rank(
        self, expr: ast.AST, taint: set[str], laundered: dict[str, int] | None = None, files: bool = True
    ) -> bool:
        """Whether the value of ``expr`` can differ between ranks. ``laundered``: names that hold the same
        value on every rank after the given line (they came out of a broadcast or all-reduce). ``files``: a
        question to the file system counts (see :func:`_file_check`)."""
        stack = [expr]
        while stack:
            node = stack.pop()
            if isinstance(node, ast.Lambda) or id(node) in self.same_result_calls or _sentinel_test(node):
                continue
            if isinstance(node, ast.Subscript) and self._tuple_element(node) is not None:
                position, call = self._tuple_element(node)  # type: ignore[misc]
                if position:
                    return True
                stack += [*call.args, *(k.value for k in call.keywords)]
                continue
            if isinstance(node, ast.Name) and (_rank_name(node.id) or node.id in taint or node.id in self.rank_funcs):
                if (
                    laundered
                    and node.id in laundered
                    and node.lineno > laundered[node.id]
                    and (laundered[node.id] < 0 or not _rank_name(node.id))  # -1: a constant_rank_params name
                ):
                    continue
                return True
            if isinstance(node, ast.Attribute) and (
                _rank_name(node.attr) or node.attr in self.rank_funcs or _dotted(node) in taint
            ):
                dotted = _dotted(node)
                if (
                    laundered
                    and dotted in laundered
                    and node.lineno > laundered[dotted] >= 0
                    and not _rank_name(node.attr)
                    and node.attr not in self.rank_funcs
                ):
                    continue  # ``self.stop = box[0]`` after ``broadcast_object_list(box)``: agreed from there on
                return True
            if _env_rank(node) or (files and self._counted_look(node)) or _log_level_check(node):
                return True
            if isinstance(node, ast.Call) and self.rng_seeder is not None and self._global_draw(node):
                return True
            if isinstance(node, ast.Call) and self._clock_reading(node):
                return True
            if _splits_between_ranks(node):
                return True
            if isinstance(node, ast.Call):
                stack.append(node.func)
                called = _terminal(node.func)
                if called not in _DATA_ONLY_CALLS and not self._sampler_class(called):
                    skip = _DATA_ONLY_KEYWORDS | (_DISPLAY_KEYWORDS if called in _PROGRESS_BARS else frozenset())
                    inert = self._inert_rank_params(node.func)
                    stack += [a for i, a in enumerate(node.args) if i not in inert]
                    stack += [k.value for k in node.keywords if k.arg not in skip and k.arg not in inert]
                continue
            stack.extend(ast.iter_child_nodes(node))
        return False

    def _inert_rank_params(self, func: ast.expr) -> frozenset:
        """The parameters (names and positions) of the file's function ``func`` names whose value cannot reach
        what it returns or what it decides: a rank parameter used only in sentinel tests (``rank == -1``, the same
        on every rank: :func:`_sentinel_test`), in ``with`` items (``with torch_distributed_zero_first(rank):``)
        and in calls made for their effect alone. YOLOv5's ``create_dataloader(..., rank=local_rank)`` returns a
        loader whose sampler is a ``DistributedSampler`` on every rank (round 19): its result is not
        rank-dependent. Empty when the function is not the file's or takes ``*args``/``**kwargs``."""
        if not isinstance(func, ast.Name):
            return frozenset()
        key = func.id if func.id in self.table else None
        if key is None:
            return frozenset()
        cached = self._inert_cache.get(key)
        if cached is None:
            cached = self._inert_cache[key] = self._find_inert_params(self.table[key].node)
        return cached

    @staticmethod
    def _find_inert_params(node: ast.AST) -> frozenset:
        args = node.args
        if args.vararg or args.kwarg:
            return frozenset()
        params = [a.arg for a in (*args.posonlyargs, *args.args)]
        found: set = set()
        for position, name in enumerate(params):
            if not _rank_name(name):
                continue
            allowed: set[int] = set()
            for inner in ast.walk(node):
                if isinstance(inner, ast.Compare) and _sentinel_test(inner):
                    allowed |= {id(n) for n in ast.walk(inner)}
                elif isinstance(inner, ast.withitem) and inner.optional_vars is None:
                    allowed |= {id(n) for n in ast.walk(inner.context_expr)}
                elif isinstance(inner, ast.Expr) and isinstance(inner.value, ast.Call):
                    allowed |= {id(n) for n in ast.walk(inner.value)}
                elif isinstance(inner, ast.Call) and _seeds(inner):
                    # a seed (``torch.Generator().manual_seed(seed + rank)``): each rank draws other numbers, as
                    # many of them as every other rank (round 26's make_data(rank, 32, epoch))
                    allowed |= {id(n) for a in (*inner.args, *(k.value for k in inner.keywords)) for n in ast.walk(a)}
            uses = [n for n in ast.walk(node) if isinstance(n, ast.Name) and n.id == name]
            if any(isinstance(n.ctx, ast.Store) for n in uses):
                continue
            if all(id(n) in allowed for n in uses):
                found |= {name, position}
        return frozenset(found)

    @cached_property
    def signal_attrs(self) -> frozenset[str]:
        """Attributes (``self._signal_received``) and globals a signal handler sets: a signal reaches one process
        (the scheduler's preemption notice, a user's ``kill``), so what the handler records differs between ranks
        until they agree on it (Megatron-LM's ``DistributedSignalHandler`` all-gathers it)."""
        handlers: set[str] = set()
        trees = [u.tree for u in self.units]
        for tree in trees:
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.Call)
                    and _dotted(node.func) in ("signal.signal", "signal")
                    and len(node.args) > 1
                ):
                    if isinstance(node.args[1], (ast.Name, ast.Attribute)):  # a function, or a bound method
                        handlers.add(
                            _terminal(node.args[1])
                        )  # (pocket-tts's ``signal.signal(SIGTERM, self._handler)``)
        found: set[str] = set()
        for tree in trees:
            for func in ast.walk(tree):
                if not (isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)) and func.name in handlers):
                    continue
                declared = {n for g in ast.walk(func) if isinstance(g, (ast.Global, ast.Nonlocal)) for n in g.names}
                for node in ast.walk(func):
                    if isinstance(node, (ast.Assign, ast.AugAssign)):
                        for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                            if isinstance(target, ast.Attribute):
                                found.add(target.attr)
                            elif isinstance(target, ast.Name) and target.id in declared:
                                found.add(target.id)
        return frozenset(found)

    def _signal_reads(self, nodes: list[ast.AST]) -> set[str]:
        """The names and attributes read in ``nodes`` that a signal handler sets (see :attr:`signal_attrs`)."""
        if not self.signal_attrs:
            return set()
        out = set()
        for node in nodes:
            if isinstance(node, ast.Attribute) and node.attr in self.signal_attrs and _dotted(node):
                out.add(_dotted(node))
            elif isinstance(node, ast.Name) and node.id in self.signal_attrs:
                out.add(node.id)
        return out

    def _global_draw(self, call: ast.Call) -> bool:
        """A draw from torch's, Python's or numpy's global random state (no ``generator=`` of its own)."""
        if any(k.arg in ("generator", "rng") for k in call.keywords) or not _dotted(call.func):
            return False
        unit = self.units[0] if self.units else None
        full = self._resolve(call.func, unit) if unit is not None else ""
        module, _, name = full.rpartition(".")
        if module == "torch":
            return name in _TORCH_DRAWS
        return module in ("random", "numpy.random", "np.random") and name in _PY_DRAWS

    def _clock_reading(self, call: ast.Call) -> bool:
        """A reading of this process's clock (``time.monotonic()``, ``time.time()``, ``datetime.now()``...): each
        rank reads its own, at its own moment, so a decision taken on it ("save every 30 minutes", "stop before
        the time limit") can differ between ranks (Lightning's ``ModelCheckpoint(train_time_interval=...)``
        broadcasts rank 0's decision for this reason; Megatron-LM's ``--exit-duration-in-mins`` all-reduces it)."""
        if call.args or not _dotted(call.func):
            return False
        unit = self.units[0] if self.units else None
        full = self._resolve(call.func, unit) if unit is not None else ""
        return full in _CLOCKS

    def _taint(self, nodes: list[ast.AST], inherited: set[str], laundered: dict[str, int] | None = None) -> set[str]:
        """Names (and ``self.x``/``bar.n`` attributes) whose value can differ between ranks. A progress bar
        disabled on some ranks (``tqdm(..., disable=not is_main)``) iterates the same items everywhere, but its
        counters (``bar.n``) stay 0 where it is disabled: they are rank-dependent, the bar itself is not."""
        pairs = _assignments(nodes) + _loop_targets(nodes)

        def test(value: ast.expr, index: int | None, taint: set[str]) -> bool:
            return self._value_rank(value, index, taint, laundered)

        flags = _handler_names(nodes)
        self.handler_flags |= flags
        names = _closure(pairs, set(inherited) | flags | self._signal_reads(nodes), test)
        controls = _controlled(nodes, self.modules)
        while controls:  # implicit flow: what an if or while on the rank assigns differs between ranks
            added: set[str] = set()
            for cond, targets in controls:
                if not targets <= names and self.mentions_rank(cond, names, laundered, files=False):
                    added |= targets - names
            if not added:
                break
            names = _closure(pairs, names | added, test)
        counters = {
            f"{target}.{counter}"
            for targets, value, index in pairs
            if index is None and self._rank_bar(value, names, laundered)
            for target in targets
            for counter in _BAR_COUNTERS
        }
        return _closure(pairs, names | counters, test) if counters - names else names

    def taint_before(self, key: str, line: int) -> set[str] | None:
        """The names of function ``key`` that can differ between ranks from its statements before ``line`` only
        (what the function assigns later cannot reach a test at ``line`` outside a loop: attack23 a06 c,
        torchtitan's ``if seed is None: broadcast(...)`` with ``seed += rank_in_pp`` after it); None when
        unknown."""
        func = self.table.get(key)
        if func is None or key not in self.func_inherited:
            return None
        nodes = [n for n in _own_nodes(func.node.body) if getattr(n, "lineno", line) < line]
        return self._taint(nodes, self.func_inherited[key], self.laundered.get(key))

    def rank_before(self, key: str, test: ast.expr, laundered: dict[str, int] | None) -> bool:
        """``mentions_rank(test, taint_before(key, test.lineno), laundered)``, from the function's two
        :class:`_PrefixTaint` sweeps (made once per function), with :meth:`taint_before` itself only where they
        disagree: True when the function is unknown."""
        func = self.table.get(key)
        if func is None or key not in self.func_inherited:
            return True
        sweeps = self._prefix_taints.setdefault((key, self.strict_looks), {})
        for every_call in (False, True):
            if every_call not in sweeps:
                sweeps[every_call] = _PrefixTaint(self, func, every_call)
            rank = self.mentions_rank(test, sweeps[every_call].holds(test, test.lineno), laundered)
            if rank != every_call:  # rank in the smaller taint, or not in the larger one: the same in between
                return rank
        return self.mentions_rank(test, self.taint_before(key, test.lineno), laundered)  # type: ignore[arg-type]

    def _rank_bar(self, value: ast.expr, taint: set[str], laundered: dict[str, int] | None) -> bool:
        """A progress bar whose ``disable=`` differs between ranks."""
        return (
            isinstance(value, ast.Call)
            and _terminal(value.func) in _PROGRESS_BARS
            and any(k.arg == "disable" and self.mentions_rank(k.value, taint, laundered) for k in value.keywords)
        )

    def _tuple_element(self, node: ast.Subscript) -> tuple[bool, ast.Call] | None:
        """For ``f(...)[i]`` where ``f`` of this file returns tuples: whether element ``i`` is rank-dependent."""
        call, index = node.value, node.slice
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Name)
            and isinstance(index, ast.Constant)
            and type(index.value) is int
        ):
            return None
        positions = self.tuple_ranks.get(call.func.id)
        if positions is None or not 0 <= index.value < len(positions):
            return None
        return positions[index.value], call

    def _value_rank(
        self, value: ast.expr, index: int | None, taint: set[str], laundered: dict[str, int] | None
    ) -> bool:
        """Whether an assigned value differs between ranks; element ``index`` of a same-file function's
        returned tuple only if that element does (``rank, world_size = get_dist_info()``)."""
        subscript = value.slice if isinstance(value, ast.Subscript) else None
        if isinstance(subscript, ast.Constant) and type(subscript.value) is int:
            value, index = value.value, subscript.value  # type: ignore[attr-defined]
        if index is not None and isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
            positions = self.tuple_ranks.get(value.func.id)
            if positions is not None and 0 <= index < len(positions):
                inert = self._inert_rank_params(value.func)
                args = [a for i, a in enumerate(value.args) if i not in inert]
                args += [k.value for k in value.keywords if k.arg not in inert]
                flows = self._tuple_flow(value.func.id)
                if flows is not None and len(value.args) <= len(flows[0]):  # only the arguments whose parameters
                    params, reach = flows  # reach this element (round 26's resume step)
                    args = [a for i, a in enumerate(value.args) if i not in inert and params[i] in reach[index]]
                    args += [k.value for k in value.keywords if k.arg not in inert and k.arg in reach[index]]
                return positions[index] or any(self.mentions_rank(a, taint, laundered) for a in args)
        return self.mentions_rank(value, taint, laundered)

    def _leaves_on_error(self, node: ast.Try, flowed: set[str]) -> bool:
        """A ``try`` whose body uses ``flowed`` names and one of whose handlers leaves (``continue``, ``break``,
        ``return``, ``raise``)."""
        leaves = (ast.Continue, ast.Break, ast.Return, ast.Raise)
        return any(isinstance(n, leaves) for h in node.handlers for n in _own_nodes(h.body)) and any(
            self.mentions_rank(stmt, flowed, files=False) for stmt in node.body
        )

    def _tuple_flow(self, name: str) -> tuple[list[str], tuple[frozenset[str], ...]] | None:
        """For a function of the file returning tuples of one size (``tuple_ranks``): its positional parameters and,
        per element, the parameters whose value can flow into it (through assignments, loops and the ``if``s that
        set it): ``step, state, extra = load_latest(folder, rank)`` takes ``rank`` into ``extra`` only, so
        ``step`` is the same on every rank. None when it cannot say (``*args``, a call with more positional
        arguments than parameters is then left as it was, a function reaching itself)."""
        if name in self._tuple_flows:
            return self._tuple_flows[name]
        self._tuple_flows[name] = None
        func = self.table.get(name)
        sizes = self.tuple_ranks.get(name)
        if func is None or sizes is None or func.node.args.vararg or func.node.args.kwarg:
            return None
        args = func.node.args
        params = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
        own = list(_own_nodes(func.node.body))
        values = [n.value for n in own if isinstance(n, ast.Return) and isinstance(n.value, ast.Tuple)]
        if not values or any(len(v.elts) != len(sizes) for v in values):
            return None
        reach: list[set[str]] = [set() for _ in sizes]
        for param in params:
            flowed = self._taint(own, {param}, self.laundered.get(func.key))
            if any(self._leaves_on_error(t, flowed) for t in own if isinstance(t, ast.Try)):
                # an error the parameter can cause moves the loop on (``except OSError: continue``): which element
                # is returned, and from which iteration, depends on it (round 26's per-rank resume fallback)
                for i in range(len(sizes)):
                    reach[i].add(param)
                continue
            for i in range(len(sizes)):
                if any(self.mentions_rank(v.elts[i], flowed, files=False) for v in values):
                    reach[i].add(param)
        found = (params, tuple(frozenset(r) for r in reach))
        self._tuple_flows[name] = found
        return found

    def _prepare_taint(self) -> None:
        module_nodes = [n for u in self.units if u.report for n in _own_nodes(u.tree.body)]
        own = {f.key: list(_own_nodes(f.node.body)) for f in self.funcs}
        attrs: set[str] = set()
        settled_by: dict[str, set[str]] = {}
        for _ in range(6):
            before = (len(attrs), len(self.rank_funcs), len(self.module_taint), self.rng_seeder)
            self.module_taint = self._taint(module_nodes, attrs, self.laundered.get(None))
            self._find_rng_seeder(None, module_nodes, self.module_taint)
            for func in self.funcs:
                inherited = self.module_taint | attrs | self.func_taint.get(func.parent or "", set())
                inherited |= self._typed_attributes(func, attrs)
                inherited -= self._entered_settled(func, settled_by, inherited)
                self.func_inherited[func.key] = inherited
                taint = self.func_taint[func.key] = self._taint(own[func.key], inherited, self.laundered.get(func.key))
                self._find_rng_seeder(func.key, own[func.key], taint)
                settled_by[func.key] = self._settled_attributes(func, own[func.key], taint)
                attrs |= {n for n in taint if "." in n} - settled_by[func.key]
                attrs |= self._effects(func, taint)
                returned = taint - self._equalized(own[func.key], func.unit)
                values = [n.value for n in own[func.key] if isinstance(n, ast.Return) and n.value is not None]
                if any(self.mentions_rank(v, returned) for v in values):
                    self.rank_funcs.add(func.node.name)
                    self.rank_returns.add(func.key)
                sizes = {len(v.elts) if isinstance(v, ast.Tuple) else -1 for v in values}
                if len(sizes) == 1 and -1 not in sizes:
                    self.tuple_ranks[func.node.name] = tuple(
                        any(self.mentions_rank(v.elts[i], returned) for v in values)  # type: ignore[attr-defined]
                        for i in range(sizes.pop())
                    )
            if (len(attrs), len(self.rank_funcs), len(self.module_taint), self.rng_seeder) == before:
                break

    def _seed_gated_returns(self) -> None:
        """lintrecall32b. A function of the file whose decorator runs it on some ranks only (``@rank_zero_only``,
        ``@master_only``, Accelerate's ``on_main_process``, a decorator of the file that tests the rank) and that
        returns a value: its call gives that value on those ranks and None elsewhere, so the result differs
        between ranks (round 15's ``buggy_rank_zero_only_return_value``: ``vocab_size = prepare_data(...)`` is None
        on rank 1). Sources, read as stored public copies with the search tools: Lightning-AI/utilities
        src/lightning_utilities/core/rank_zero.py at commits 4ccc2d3 and 083dbec (``if rank_zero_only.rank == 0:
        return fn(*args, **kwargs)``, then ``return None``); mmcv/mmengine ``master_only`` (``if rank == 0: return
        func(...)``, nothing returned otherwise); accelerate src/accelerate/state.py ``PartialState.on_main_process``
        (``return do_nothing`` on the other processes)."""
        self.gated_returns: dict[str, str] = {}
        for func in self.funcs:
            if not any(
                isinstance(n, ast.Return)
                and n.value is not None
                and not (isinstance(n.value, ast.Constant) and n.value.value is None)
                for n in _own_nodes(func.node.body)
            ):
                continue
            for deco in func.node.decorator_list:
                target = deco.func if isinstance(deco, ast.Call) else deco
                if (
                    _terminal(target) in _GATING_DECORATOR_NAMES
                    or self._process_decorator(target)
                    or self._gating_decorator(target, func.unit)
                ):
                    self.rank_funcs.add(func.node.name)
                    self.rank_returns.add(func.key)
                    self.gated_returns[func.node.name] = func.unit.text(deco)
                    break

    def _settled_attributes(self, func: _Func, nodes: list[ast.AST], taint: set[str]) -> set[str]:
        """The attributes (``trainer.should_stop``, ``self.stop``) that ``func`` leaves the same on every rank
        whatever it did to them before: its last write of the attribute is a statement of the function's own
        body (under no ``if``, loop or ``try``) assigning a value an all-reduce or broadcast made equal (sleap-nn's
        ``trainer.should_stop = bool(decision.item())`` after ``all_reduce(decision, op=MAX)``, round 41), and no
        ``return`` or ``yield`` before it lets a rank out with the old value. Inside ``func`` the attribute
        stays rank-dependent (taint is not ordered by line); the callers see the settled value."""
        laundered = self.laundered.get(func.key)
        if not laundered or any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in nodes):
            return set()
        settled: set[str] = set()
        body = func.node.body
        for index, stmt in enumerate(body):
            if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
                continue
            name = _dotted(stmt.targets[0])
            if not name or "." not in name or name not in taint:
                continue
            if self.mentions_rank(stmt.value, taint, laundered):
                continue
            if name in _changed_names(body[index + 1 :]):
                continue
            if any(isinstance(n, ast.Return) for n in _own_nodes(body[:index])):
                continue
            settled.add(name)
        return settled

    def _entered_settled(self, func: _Func, settled_by: dict[str, set[str]], inherited: set[str]) -> set[str]:
        """The ``self.`` attributes of ``inherited`` that every call of the method ``func`` finds settled: each
        call is a statement ``self.<func>()`` of a method of its class, and the statement before it in the same
        block is ``self.<other>()`` of a method that settles the attribute (:meth:`_settled_attributes`), with
        nothing between them. mmrazor's ``EvolutionSearchLoop`` (round 27): ``sample_candidates()`` ends with
        ``self.candidates = box[0]`` after broadcasting the list, and ``update_candidates_scores()``, called
        right after it, loops over the candidates. Empty when the method is named anywhere else (a hook, a
        callback) or not called at all."""
        wanted = {a for a in inherited if a.startswith("self.") and a.count(".") == 1}
        if func.self_class is None or not wanted or not any(wanted & s for s in settled_by.values()):
            return set()
        name = func.node.name
        if name in self._uncalled_references:
            return set()
        calls = self.calls_named(name)
        if not calls:
            return set()
        found: set[int] = set()
        for caller in self.funcs:
            if caller.self_class != func.self_class:
                continue
            for block in _blocks(caller.node.body):
                for index, stmt in enumerate(block):
                    call = stmt.value if isinstance(stmt, ast.Expr) else None
                    if not (isinstance(call, ast.Call) and _dotted(call.func) == f"self.{name}"):
                        continue
                    before = block[index - 1] if index else None
                    prior = before.value if isinstance(before, ast.Expr) else None
                    if not (isinstance(prior, ast.Call) and isinstance(prior.func, ast.Attribute)):
                        return set()
                    if _dotted(prior.func.value) != "self":
                        return set()
                    other = self._callee(prior.func, caller.self_class, caller.unit)
                    if other is None:
                        return set()
                    wanted &= settled_by.get(other, set())
                    found.add(id(call))
        if any(id(c) not in found for c in calls):
            return set()  # called elsewhere, on another object or inside an expression
        return wanted

    def _find_rng_seeder(self, key: str | None, nodes: list[ast.AST], taint: set[str]) -> None:
        """Remember the first call that seeds a global random state with a value that differs between ranks
        (``torch.manual_seed(seed + rank)``, ``random.seed(rank)``): from then on, what that state draws
        (``torch.randperm(n)`` without ``generator=``, ``random.shuffle``) differs between ranks too."""
        if self.rng_seeder is not None:
            return
        unit = self.table[key].unit if key is not None else (self.units[0] if self.units else None)
        for node in nodes:
            if isinstance(node, ast.Call) and node.args and _dotted(node.func) and unit is not None:
                if self._resolve(node.func, unit) in _GLOBAL_SEEDS and self.mentions_rank(node.args[0], taint):
                    self.rng_seeder = f"{unit.text(node)} at line {node.lineno + unit.offset}"
                    return

    def _typed_attributes(self, func: _Func, attrs: set[str]) -> set[str]:
        """``x.a`` for every name ``x`` of ``func`` that holds an object of a class of the file (built there, or
        handed to a parameter) whose ``self.a`` differs between ranks."""
        if not attrs:
            return set()
        names = {n for key in (func.key, None) for n, b in self.objects.get(key, {}).items() if b.local}
        return {f"{n}.{a[5:]}" for n in names for a in attrs if a.startswith("self.") and a.count(".") == 1}

    def _effects(self, func: _Func, taint: set[str]) -> set[str]:
        """The ``self.`` attributes that methods of the file change when ``func`` calls them under a condition or
        in a loop that differs between ranks (``for name in stages[rank]: monitor.record(name, x)``): the object's
        state then differs between ranks too."""
        laundered = self.laundered.get(func.key)
        out: set[str] = set()

        def visit(stmts: list[ast.stmt], ranked: bool) -> None:
            for stmt in stmts:
                if isinstance(stmt, _SCOPES):
                    continue
                inner = ranked
                if isinstance(stmt, (ast.If, ast.While)):
                    inner = ranked or self.mentions_rank(stmt.test, taint, laundered, files=False)
                elif isinstance(stmt, (ast.For, ast.AsyncFor)):
                    inner = ranked or self.mentions_rank(stmt.iter, taint, laundered, files=False)
                if ranked:
                    heads = [c for c in ast.iter_child_nodes(stmt) if isinstance(c, ast.expr)]
                    for call in (n for h in heads for n in ast.walk(h) if isinstance(n, ast.Call)):
                        target = self._callee(call.func, func.self_class, func.unit) or self._indirect(
                            call.func, func.self_class, func.key
                        )
                        if target is not None and self.table[target].self_class is not None:
                            out.update(n for n in _changed_names(self.table[target].node.body) if n.startswith("self."))
                for part in ("body", "orelse", "finalbody", "handlers"):
                    block = getattr(stmt, part, None)
                    if isinstance(block, list):
                        visit(
                            [b for b in block if isinstance(b, ast.stmt)]
                            or [x for h in block if isinstance(h, ast.ExceptHandler) for x in h.body],
                            inner,
                        )

        visit(func.node.body, False)
        return out

    def _equalized(self, nodes: list[ast.AST], unit: _Unit) -> set[str]:
        """Names a function hands to a collective that makes them equal on every rank (a broadcast or an
        all-reduce/gather fills them with the same data everywhere), so returning them is rank-independent."""
        names = set()
        # ``nodes`` are a scope's own nodes, every one of them: each is looked at once, and only the nested
        # scopes (lambdas, functions) they hold are walked (walking every node's subtree was quadratic in the
        # depth of an ``elif`` chain: attack21 a05)
        nested = (
            n for node in nodes for c in ast.iter_child_nodes(node) if isinstance(c, _SCOPES) for n in ast.walk(c)
        )
        for call in itertools.chain(nodes, nested):
            if isinstance(call, ast.Call) and call.args and isinstance(call.args[0], ast.Name):
                op = self._collective(call.func, unit)
                if op and op.rpartition(".")[2] in _EQUALIZING:
                    names.add(call.args[0].id)
        return names

    def _walk_function(self, func: _Func) -> None:
        walker = _Walker(self, func.unit, self.func_taint[func.key], func.self_class, func.key)
        items = walker.block(func.node.body, "return")
        for deco in func.node.decorator_list:
            target = deco.func if isinstance(deco, ast.Call) else deco
            if (
                _rank_name(_terminal(target))
                or self._process_decorator(target)
                or self._gating_decorator(target, func.unit)
            ):
                flags = self._flags_set(target, func.unit)
                for site in _sites(items):
                    found = self.classify(site.node, func.unit, func.self_class, func.key) if flags else None
                    target = found.target if found is not None and found.kind == "call" else None
                    if not (flags and self._chain_off_while(target, flags)):
                        self.flag(func.unit, site, "decorator", "@" + func.unit.text(deco), None)
        bases = set(self._ancestors(func.self_class)) if func.self_class else set()
        for hook in RANK_HOOKS:
            if hook.name == func.node.name and hook.bases & bases:
                cond = f"{hook.framework} runs {hook.name}() on some ranks only"
                walker.flag(items, "hook", cond, detail=(hook.framework, hook.name, hook.runs_on, hook.fix))
                break

    def _flags_set(self, target: ast.expr, unit: _Unit) -> set[str]:
        """The module globals a decorator of the file sets (``global MAIN_PROC_ONLY``; ``MAIN_PROC_ONLY += 1``)
        while it runs the function it wraps: SpeechBrain's ``main_process_only`` counts the main-process-only
        sections it is in."""
        key = self._callee(target, None, unit)
        if key is None:
            return set()
        nodes = list(ast.walk(self.table[key].node))
        declared = {name for n in nodes if isinstance(n, ast.Global) for name in n.names}
        return {
            t.id
            for n in nodes
            if isinstance(n, (ast.Assign, ast.AugAssign))
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
            if isinstance(t, ast.Name) and t.id in declared
        }

    def _chain_off_while(self, key: str | None, flags: set[str]) -> bool:
        """Whether a function on the chain by which ``key`` reaches its collective returns, before any call that
        makes or reaches one, when one of ``flags`` is set: ``if not dist.is_initialized() or MAIN_PROC_ONLY >= 1:
        return obj`` at the top of SpeechBrain's ``ddp_broadcast`` (PR #2404) keeps the broadcast out of a
        main-process-only section."""
        seen: set[str] = set()
        while key is not None and key in self.table and key not in seen:
            seen.add(key)
            func = self.table[key]
            first = min((n.lineno for n, _found, _terms in self._reaching_calls(func)), default=None)
            for stmt in func.node.body:
                if first is None or stmt.lineno >= first:
                    break
                if (
                    isinstance(stmt, ast.If)
                    and not stmt.orelse
                    and all(isinstance(b, ast.Return) for b in stmt.body)
                    and any(_flag_test(t, flags) for t in _or_terms(stmt.test))
                ):
                    return True
            key = self.reach.get(key, (None, None))[1]
        return False

    @staticmethod
    def _process_decorator(target: ast.expr) -> bool:
        """Accelerate's ``@accelerator.on_process(...)``, ``on_local_process``, ``on_last_process`` (on an
        ``Accelerator`` or ``PartialState``): the function runs on one process only."""
        if not (isinstance(target, ast.Attribute) and target.attr in _PROCESS_DECORATORS):
            return False
        receiver = target.value.func if isinstance(target.value, ast.Call) else target.value
        return _terminal(receiver).lower() in _STATE_RECEIVERS

    def _gating_decorator(self, target: ast.expr, unit: _Unit) -> bool:
        """Whether a decorator whose name says nothing of ranks runs the function on some ranks only: a library
        decorator known to (:data:`_RANK_DECORATORS`), or a function of the file or of a followed module (mmcv's
        ``master_only`` copied into ``dist_utils.py``) whose every call of the function it wraps sits under a
        rank-dependent ``if``, or after a ``return``/``raise`` under one."""
        if self._resolve(target, unit) in _RANK_DECORATORS:
            return True
        key = self._callee(target, None, unit)
        if key is None:
            return False
        if key not in self.gates:
            self.gates[key] = False  # a decorator that decorates itself stops here
            self.gates[key] = self._gates_on_rank(self.table[key])
        return self.gates[key]

    def _gates_on_rank(self, func: _Func) -> bool:
        params = [a.arg for a in func.node.args.args]
        if not params:
            return False
        wrapped = params[0]
        parents: dict[int, ast.AST] = {}
        for node in ast.walk(func.node):
            for child in ast.iter_child_nodes(node):
                parents[id(child)] = node
        calls = [
            n
            for n in ast.walk(func.node)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == wrapped
        ]
        return bool(calls) and all(self._gated(call, parents) for call in calls)

    def _gated(self, node: ast.AST, parents: dict[int, ast.AST]) -> bool:
        """Whether ``node`` runs only on the ranks a rank-dependent test lets through, within its function."""
        scope = node
        while not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            scope = parents[id(scope)]
        taint = self._taint(list(_own_nodes(scope.body)), set(self.module_taint))
        child = node
        while child is not scope:
            parent = parents[id(child)]
            if isinstance(parent, (ast.If, ast.IfExp, ast.While)) and child is not parent.test:
                if self.mentions_rank(parent.test, taint):
                    return True
            for part in ("body", "orelse", "finalbody"):
                block = getattr(parent, part, None)
                if isinstance(block, list) and child in block:
                    for earlier in block[: block.index(child)]:
                        if (
                            isinstance(earlier, ast.If)
                            and self.mentions_rank(earlier.test, taint)
                            and any(isinstance(n, (ast.Return, ast.Raise)) for n in ast.walk(earlier))
                        ):
                            return True
            child = parent
        return False

    # -- findings

    def flag(
        self, unit: _Unit, site: _Site, reason: str, cond: str, leave: _Leave | None, detail: tuple[str, ...] = ()
    ) -> None:
        """Record a finding for ``site``; ``detail``: what the reason needs besides the condition (a hook's
        ranks and fix; the states and the update line of a metric fed in a loop)."""
        if id(site.node) in self.found:
            return
        call = unit.text(site.node)
        if len(call) > 40:
            call = f"{_dotted(site.node.func)}(...)"
        exit_text = ""
        if leave is not None and leave.exit is not None and leave.exit.node is not None:
            exit_node = leave.exit.node
            raised = isinstance(exit_node, ast.Call) and _dotted(exit_node.func) not in _EXIT_CALLS
            verb = ", which can raise" if raised else ""
            if isinstance(exit_node, ast.Call) and _ends_the_group(exit_node):
                verb = ", which ends this rank's default process group"
            home = self._unit_of(exit_node, unit)  # a helper's raise may sit in another unit (cell, module)
            exit_text = f" (`{home.text(exit_node)}` at line {exit_node.lineno + home.offset}{verb})"
        kind, why, fix = _explain(reason, site, cond, call, exit_text, detail)
        synced = (
            self._same_call_in_no_sync(unit, site)
            if reason == "branch" and "(DDP backward)" in site.collective
            else None
        )
        if synced is not None:  # attack24 a08: the other ranks do call it, where DDP makes no all_reduce
            block, line = synced
            why = (
                f"only ranks where `{cond}` is true make this backward's gradient all_reduce: the others make the "
                f"same call at line {line}, inside `{unit.text(block.items[0].context_expr)}`, where DDP's backward "
                "makes no gradient all_reduce, so it waits until the timeout, "
                f"{_ends_on_gloo('a rank that made none', 'fails')}, or pairs with a different collective"
            )
            fix = (
                f"the same call at line {line} runs inside `{unit.text(block.items[0].context_expr)}`: enter "
                "`no_sync()` on every rank at the same steps, or on none (decide when to synchronise from something "
                "every rank agrees on, such as the step count), so every rank's backward makes the same all_reduces"
            )
        if self.local_notes.get(cond) == _GRAD_PRESENCE and reason in ("early-exit", "loop"):
            why += (
                f"; `{cond}` depends on which parameters this rank's own batch reached (a mixture-of-experts layer, "
                "a branch of the forward), so ranks skip different parameters and make different numbers of "
                "collectives"
            )
            fix = (
                "reduce every parameter on every rank: give a missing gradient zeros (`torch.zeros_like(p)`) "
                "instead of skipping it, or use DDP (find_unused_parameters=True)"
            )
        elif cond in self.local_notes and reason in ("early-exit", "loop"):
            note = self.local_notes[cond]
            own = "batch" if note.startswith("the batch") else "model output"
            why += (
                f"; `{cond}` is computed from this rank's own {own} ({note}), which "
                "differs between ranks (each rank's own data: its sequence ends, or its loss crosses a threshold, "
                "at its own step) and is not agreed on by a broadcast or all_reduce"
            )
            fix = (
                "decide the exit together: all_reduce a 'done' flag (ReduceOp.MIN of 'still running', or MAX of "
                "'done') every iteration and leave on every rank when it says so; ranks that finished early keep "
                "calling the forward and discard its output (transformers' generate(synced_gpus=True))"
            )
            if cond in self.local_returns:  # an early return from a step function, not a loop exit
                fix = (
                    f"decide the return together: all_reduce a flag of `{cond}` (ReduceOp.MAX: 1 where it holds) "
                    "and return on every rank when the reduced flag is set, so every rank skips the same steps"
                )
        elif cond in self.local_notes and reason == "branch":
            note = self.local_notes[cond]
            own = "batch" if "batch" in note else "model output"
            why += (
                f"; `{cond}` is computed from this rank's own {own} ({note}), which differs between ranks and is not "
                "agreed on by a broadcast or all_reduce, so each rank takes the branch on its own"
            )
            fix = (
                "make this call on every rank whatever its own data holds (run the branch on a placeholder input and "
                "discard the result: under ZeRO-3/FSDP every rank must run every submodule's forward), or agree on "
                f"the test first (all_reduce a flag of `{cond}` with ReduceOp.MAX) and branch on the agreed value"
            )
        elif cond in self.share_notes and reason == "branch":
            arg, callee, param, line = self.share_notes[cond]
            why += (
                f"; the call at line {line} hands `{callee}()`'s parameter `{param}` this rank's own share of the "
                f"data, `{arg}`, which differs between ranks and whose length lint cannot show to be the same on "
                f"every rank, so `{cond}` inside `{callee}()` comes out differently on different ranks"
            )
            fix = (
                f"agree on the test first: all_reduce what `{cond}` reads (the share's length, with ReduceOp.MIN, or a "
                f"flag with ReduceOp.MAX) and decide on the agreed value on every rank, or give every rank a share of "
                "the same length (pad it, or drop the remainder before splitting)"
            )
        flags = sorted(f for f in self.handler_flags if re.search(rf"(?<![\w.]){re.escape(f)}\b", cond))
        if flags and reason == "branch":
            why += (
                f"; `{flags[0]}` is set in an except handler, so it records what happened on this rank only (the "
                "ranks whose code did not raise hold the other value)"
            )
            fix = (
                f"agree on `{flags[0]}` first (all_reduce it with ReduceOp.MAX, or broadcast the outcome from the rank "
                f"that decides), then branch on the agreed value; or call `{call}` on every rank"
            )
        signalled = sorted(a for a in self.signal_attrs if re.search(rf"(?:\.|\b){re.escape(a)}\b", cond))
        if signalled and not flags:
            why += (
                f"; `{signalled[0]}` is set by a signal handler (`signal.signal`), and a signal reaches one process "
                "(a scheduler's preemption notice, a `kill`): the other ranks still hold the old value"
            )
            fix = (
                f"agree on `{signalled[0]}` first (all_gather or all_reduce it every iteration, as Megatron-LM's "
                "DistributedSignalHandler does, megatron/training/dist_signal_handler.py), then branch on the agreed value"
            )
        library = site.note.split(": ", 1)[0] if ": " in site.note else None
        finding = Finding(
            path=self.path,
            line=site.node.lineno + unit.offset,
            col=site.node.col_offset + unit.indent + 1,
            collective=site.collective,
            condition=cond,
            kind=kind,
            why=why,
            fix=fix,
            cell=unit.cell,
            framework=library if library in {entry.framework for entry in FRAMEWORK_COLLECTIVES} else None,
            condition_line=(
                int(detail[1]) if reason in ("swallow", "suppress") else _condition_line(unit, cond, site.node)
            ),
        )
        self.found[id(site.node)] = (reason, finding)

    def _same_call_in_no_sync(self, unit: _Unit, site: _Site) -> tuple[ast.With, int] | None:
        """A call of ``unit`` with the same text as ``site``'s, inside a ``with ... no_sync():`` block: that block
        and the call's line."""
        text = unit.text(site.node)
        for node in ast.walk(unit.tree):
            if isinstance(node, ast.Call) and node is not site.node and id(node) in self.no_sync_blocks:
                if unit.text(node) == text:
                    return self.no_sync_blocks[id(node)], node.lineno + unit.offset
        return None

    def _unit_of(self, node: ast.AST, guess: _Unit) -> _Unit:
        """The unit whose tree holds ``node`` (``guess`` first)."""
        for unit in (guess, *self.units):
            if any(n is node for n in ast.walk(unit.tree)):
                return unit
        return guess

    def retract(self, items: Iterable[_Item]) -> None:
        """Withdraw the "branch" and "early-exit" findings of the collectives of ``items``. An item withdrawn
        from with no finding recorded since is skipped with all under it: each case of a balanced ``elif`` chain
        withdraws its tail's (attack30 a10: quadratic in the cases)."""
        stack = list(items)
        while stack:
            item = stack.pop()
            if item.__dict__.get("_retracted_at") == self.found.recorded:
                continue
            item.__dict__["_retracted_at"] = self.found.recorded
            if item.site is not None:
                entry = self.found.get(id(item.site.node))
                if entry and entry[0] in ("branch", "early-exit"):
                    del self.found[id(item.site.node)]
            stack += item.body
            stack += item.orelse


def _explain(
    reason: str, site: _Site, cond: str, call: str, exit_text: str, detail: tuple[str, ...] = ()
) -> tuple[str, str, str]:
    """Kind, one-line reason and one-line fix of a finding."""
    short = site.collective.rsplit(" -> ", 1)[-1]
    short = short if "(" in short else short.rsplit(".", 1)[-1]
    if site.note:
        short = f"{short} ({site.note})"
    if reason == "loop":
        kind, fix = "rank-dependent-loop", _LOOP_FIX
        why = (
            f"this {short} runs once per iteration of a loop over `{cond}`, which differs between ranks, "
            "so ranks call it a different number of times: the extra calls wait until the timeout, "
            f"{_ends_on_gloo('a rank with fewer iterations')}, or pair silently with a later "
            "collective of the other ranks"
        )
    elif reason == "early-exit":
        kind = "early-exit"
        who = f"ranks whose own data makes the `try` raise (`{cond}`)" if cond.startswith("except") else ""
        why = (
            f"{who or f'ranks where `{cond}` is true'} leave early{exit_text} and never reach this {short}, "
            f"so the remaining ranks wait in it until the timeout, {_ends_on_gloo('a leaving rank')}, or pair it "
            "with a later collective"
        )
        fix = f"let every rank reach `{call}` before any rank leaves (or skip only the rank-specific work)"
        if who:
            fix = (
                "decide the skip together: catch the error into a flag, all_reduce it with ReduceOp.MAX, and skip "
                "on every rank when any rank's data failed"
            )
    elif reason == "first-raise":
        kind = "early-exit"
        why = (
            f"ranks where `{cond}` is true raise inside this block{exit_text}, and an exception skips the barrier "
            "main_process_first makes when its block ends (the code after its yield), so the other ranks wait in "
            "the barrier it made them enter first until the timeout while the raising rank lives on (it catches "
            f"the error), or {_ends_on_gloo('it')}"
        )
        fix = (
            "leave the block normally on every rank: catch the error inside it, and raise it after the block (or "
            "all_reduce an error flag and raise on every rank together)"
        )
    elif reason == "uneven-state":
        states, line, metric = detail
        kind = "rank-dependent-loop"
        why = (
            f"this {short} gathers the list states {states} one element at a time (torchmetrics' "
            "gather_all_tensors: a barrier, then one or two all_gathers per element), one element per "
            f"`{metric}.update()`, and the update at line {line} runs once per iteration of a loop over `{cond}`, "
            "which differs between ranks: ranks make different numbers of all_gathers, and the extra ones wait "
            "until the timeout or pair silently with another collective"
        )
        fix = (
            "give every rank the same number of update() calls (pad the data, e.g. DistributedSampler); for a "
            "metric of your own, declare the list state with dist_reduce_fx='cat' (torchmetrics concatenates a "
            "'cat' list before its one all_gather)"
        )
    elif reason == "set-order":
        kind = "set-order"
        why = (
            f"this {short} runs once per element of `{cond}`, a set, in the set's own order: for strings that order "
            "follows the process's hash seed, and under torchrun each worker is a fresh interpreter with a seed "
            "of its own, so ranks issue these calls in different orders: tensors of different sizes abort a rank, "
            "hang until the timeout or leave part of a tensor unfilled with no error, tensors of the same size mix silently (barrierlab.run's ranks share one seed and agree "
            "by accident)"
        )
        node = site.node
        if isinstance(node, ast.Call) and _terminal(node.func) in ("broadcast_object_list", "scatter_object_list"):
            why = (  # review62b M1: the receivers take the source's objects, whatever their own list held
                f"this {short} runs once per element of `{cond}`, a set, in the set's own order: for strings that "
                "order follows the process's hash seed, and under torchrun each worker is a fresh interpreter with a "
                "seed of its own, so ranks issue these calls in different orders: every rank receives the source "
                "rank's objects in the source's order, and a rank that uses its own loop element beside what it "
                "received pairs them wrongly, silently (barrierlab.run's ranks share one seed and agree by accident)"
            )
        fix = f"iterate in one order on every rank: `for ... in sorted({cond})`"
    elif reason == "order":
        kind = "branch"
        others, line, mine, theirs = detail
        them = f"ranks where `{others}` is true" if others else "the other ranks"  # review66b M1: no test to quote
        why = (
            f"ranks where `{cond}` is true make the collectives of this branch in one order, and {them} make the "
            f"same ones in another (they make this {short} at line {line}): collectives pair by "
            "their position in each group's sequence, so a call here meets another op, or waits in one group while "
            "its peer waits in another's, until the timeout"
        )
        fix = "make the collectives in the same order on every rank (one code path, or the same order in each branch)"
        if mine:  # the same calls on other groups (lintfix28 C): the branches wait for each other in two groups
            why = (
                f"ranks where `{cond}` is true make the collectives of this branch on `{mine}` first, and {them} make "
                f"the same ones on `{theirs}` first (they make this {short} at line {line}): each group pairs only "
                f"its own calls, so the members of `{mine}` that took this branch wait here for those that took the "
                f"other, which wait in their {short} on `{theirs}` for these, and no call returns. On gloo every member "
                "of the groups stays in its first call until the groups' timeout (a group from new_group() without timeout= has "
                "torch's default, 30 minutes, whatever init_process_group was given), then raises RuntimeError "
                "('Timed out waiting ... ms')"
            )
            fix = (
                f"make the collectives on `{mine}` and `{theirs}` in the same order on every rank (one code path, or "
                "the same order in each branch)"
            )
    elif reason == "hook":
        framework, hook, runs_on, hook_fix = detail
        kind = "branch"
        why = f"{framework} calls `{hook}()` on {runs_on}, so the others never reach this {short}"
        fix = hook_fix.format(call=call)
    elif reason == "lock":
        kind = "lock-held"
        why = (
            f"this {short} runs while this rank holds the file lock `{cond}`, which one process holds at a time: "
            f"the other ranks wait to take the lock, outside any collective, while the holder waits in the {short} "
            "for them, so neither goes on until the timeout"
        )
        fix = (
            "hold the lock only around the file work (the check, the write, the read) and make the collective "
            "outside the `with`, before or after it"
        )
    elif reason == "except":
        kind = "except-path"
        why = (
            f"this {short} sits in the `{cond}` handler of the `try` at line {detail[0]}: only ranks whose own "
            "`try` raised (their data, memory or files) run it, while the others have gone past it, into the "
            "collectives after the `try` or still inside it, so it waits until the timeout or pairs with a "
            "different collective (of another size: an abort or silently wrong data)"
        )
        fix = (
            "keep collectives out of the handler: record the failure in a flag (`failed = True`), then, after the "
            "`try` and on every rank, all_reduce the flag (ReduceOp.MAX) and let every rank take the recovery "
            "path (retry, skip, raise) together"
        )
    elif reason == "swallow":
        kind = "except-path"
        tried, handled = detail
        why = (
            f"this {short} sits in the `try` at line {tried}, whose `{cond}` handler at line {handled} goes on "
            "after the error: a rank whose own work in the `try` (its data, memory or files) raises before this "
            "call jumps to the handler and never makes it, while the other ranks do, so they wait in it until the "
            f"timeout, {_ends_on_gloo('the raising rank')}, or pair it with that rank's "
            "next collective (silently wrong data, or an abort for another size)"
        )
        fix = (
            "let the `try` hold only the rank's own work and record a failure in a flag; after it, all_reduce the "
            "flag (ReduceOp.MAX) and let every rank skip, retry or raise together before this call (or re-raise "
            "in the handler)"
        )
    elif reason == "suppress":
        kind = "except-path"
        line = detail[0]
        why = (
            f"this {short} sits in `with {cond}:` at line {line}, after work of the rank's own (its data, memory or "
            "files) that can raise one of those errors: a rank whose work raises leaves the block there, the error "
            "is swallowed and the rank goes on after the `with` without making this call, while the other ranks "
            f"make it, so they wait in it until the timeout, {_ends_on_gloo('the raising rank')}, or pair it with "
            "that rank's next collective (silently wrong data, or an abort for another size)"
        )
        fix = (
            f"keep only the rank's own work inside `{cond}` and make this call after the `with` on every rank, "
            "handing on what the work made (None when it failed), or all_reduce a failure flag (ReduceOp.MAX) and let "
            "every rank skip together"
        )
    elif reason == "main-first":
        kind = "branch"
        why = (
            f"the main process runs this block of `{cond}` while the other ranks wait in the barrier it makes them "
            f"enter first, so its {short} meets their barrier, and their {short}, made after they are let in, meets "
            "the barrier it makes when the block ends: the ranks make the same calls in different orders, so they "
            "wait until the timeout, fail on mismatched sizes, or exchange the wrong data"
        )
        fix = (
            f"make `{call}` outside the `{cond}` block, on every rank (keep only the file work, such as the download "
            "or the cache write, inside it)"
        )
    elif reason == "decorator":
        kind = "branch"
        why = f"`{cond}` runs this function on some ranks only, so the others never reach this {short}"
        fix = f"call `{call}` from code that every rank runs, outside the `{cond}` function"
    elif (
        isinstance(site.node, ast.Call)
        and _terminal(site.node.func) == "new_group"
        and reason == "branch"
        and any(
            k.arg == "use_local_synchronization" and isinstance(k.value, ast.Constant) and k.value.value is True
            for k in site.node.keywords
        )
    ):  # review81l C3: with local synchronization only the members make it, and no group counter moves
        kind = "branch"
        why = (
            f"with use_local_synchronization=True only the group's members need make this {short} (torch's "
            f"docstring), but the ranks where `{cond}` is true are not exactly its members: a member that makes it "
            "waits in it for the members that do not (barrierlab run, 4 ranks, `if rank == 0: new_group([0, 1], "
            "use_local_synchronization=True)`: rank 0 waited in new_group until the deadline)"
        )
        fix = f"make `{call}` on exactly the ranks it lists: test the rank against the same list (`if rank in ranks:`)"
    elif isinstance(site.node, ast.Call) and _terminal(site.node.func) in _GROUP_MAKING and reason == "branch":
        kind = "branch"
        why = (
            f"only ranks where `{cond}` is true make this {short}, and torch wants every rank of the world to make "
            "every group, members or not, in the same order (its docstring): a rank that skips one numbers the "
            "groups it makes later differently, so a later group every rank makes fails: " + LATER_GROUP_FAILS + " "
            "(on gloo the ranks that skip this call do not wait here; its members wait only for each other)"
        )
        fix = f"move `{call}` out from under `{cond}` so every rank calls it; use the group under the condition"
    else:
        kind = "branch"
        what = "what it issues waits" if "(DDP forward)" in short else "it waits"
        why = (
            f"only ranks where `{cond}` is true reach this {short}; the others never call it, "
            f"so {what} until the timeout, {_ends_on_gloo('a rank that skipped it', 'fails')}, "
            "or pairs with a different collective"
        )
        if isinstance(site.node, ast.Call) and site.node.args and _visibly_empty(site.node.args[0]):
            why += (  # review74c C2: rank 0's all_reduce(torch.empty(0)) returned at once and rank 0 finished
                "; with an empty tensor, as here, it has nothing to exchange and returns at once on gloo, and "
                "the ranks' later collectives are out of step instead"
            )
        fix = f"move `{call}` out from under `{cond}` so every rank calls it"
        group = next(
            (k.value for k in getattr(site.node, "keywords", ()) if k.arg == "group" and _dotted(k.value)), None
        )
        if group is not None:  # review75c M1: "every rank" made non-members call it, which lint then flagged
            fix = (
                f"make `{call}` on every member of `{_dotted(group)}`: change `{cond}` so it selects all of the "
                "group's members or none of them (a rank outside the group need not call it)"
            )
        if "(DDP forward)" in short:  # review36b: a buffer-less model's forward after training issues nothing
            fix += (
                "; or, to evaluate or log on that rank alone, call the wrapped module (`model.module(...)` under "
                "`torch.no_grad()`), which issues no collective"
            )
    if reason in ("branch", "early-exit") and _FILE_CHECK_TEXT.search(cond):
        why += (
            "; a file-system check can answer differently on different ranks (node-local disks, a network "
            "file system's caches, a file still being written)"
        )
        fix = "check on one rank and broadcast the answer (broadcast_object_list or a tensor) before branching on it"
    elif reason in ("branch", "early-exit") and _LOG_LEVEL_TEXT.search(cond):
        why += (
            "; a logger's level is each process's own, and training stacks often set it per rank (transformers' "
            "TrainingArguments use `log_level` on the main process and `log_level_replica` on the others: the "
            "levels can differ once either is set)"
        )
        fix = f"call `{call}` on every rank and keep only the logging under `{cond}`"
    if site.callee is not None:
        kind = "hidden-collective"
        callee = site.callee if site.callee.endswith((")", '"')) else f"{site.callee}()"  # len(x), f"{x}"
        verb = "call"
        if _property_read(site.node):  # review79l C3: a @property read; `m.total()` would call its value
            callee, verb = site.callee, "read"
        why = f"`{callee}` reaches {site.collective.split(' -> ', 1)[1]}; {why}"
        if reason in ("branch", "decorator"):
            fix = f"{verb} `{callee}` on every rank and keep only its rank-specific work under `{cond}`"
        elif reason == "early-exit":
            fix = f"{verb} `{callee}` on every rank before any rank leaves"
    elif site.advice:
        fix += f"; {site.advice}"
    return kind, why, fix


_NUMPY_SCALARS = frozenset(
    {"float16", "float32", "float64", "half", "single", "double", "longdouble", "int8", "int16", "int32", "int64"}
    | {"uint8", "uint16", "uint32", "uint64", "bool_", "complex64", "complex128", "intc", "intp"}
)


def _scalar_type(node: ast.expr) -> str | None:
    """The type a value visibly has: ``np.float32(x)``/``x.astype(np.float32)`` a numpy.float32, a literal or
    ``float(x)`` its Python type; None when lint cannot tell (``np.mean(x)`` follows ``x``'s dtype)."""
    if isinstance(node, ast.Constant) and type(node.value) in (int, float, bool, complex):
        return type(node.value).__name__
    if not isinstance(node, ast.Call):
        return None
    written = _dotted(node.func) or ""
    head, _, name = written.partition(".")
    if head in ("np", "numpy") and name in _NUMPY_SCALARS:
        return f"numpy.{name}"
    if written in ("float", "int", "bool", "complex"):
        return written
    if isinstance(node.func, ast.Attribute) and node.func.attr == "astype" and len(node.args) == 1:
        dtype = _dotted(node.args[0]) or ""
        head, _, name = dtype.partition(".")
        if head in ("np", "numpy") and name in _NUMPY_SCALARS:
            return f"numpy.{name}"
    return None


#: The dtype torch.tensor(...) gives a value of each type _scalar_type names (a Python float: the default float32).
_TORCH_DTYPE_OF = {"int": "int64", "float": "float32", "bool": "bool", "complex": "complex64", "half": "float16"}
_TORCH_DTYPE_OF |= {"single": "float32", "double": "float64", "intc": "int32", "intp": "int64", "bool_": "bool"}


def _torch_dtype(kind: str) -> str:
    """``numpy.float32`` -> ``float32``, ``float`` -> ``float32``: the dtype of torch.tensor(value of that type)."""
    name = kind.removeprefix("numpy.")
    return _TORCH_DTYPE_OF.get(name, name)


def _property_read(node: ast.AST) -> bool:
    """Whether ``node`` is the call :meth:`_Analysis.property_call` makes for reading a ``@property``
    (``m.total``): a call without arguments that ends where its attribute ends (no parentheses written)."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and not node.args
        and not node.keywords
        and (node.end_lineno, node.end_col_offset) == (node.func.end_lineno, node.func.end_col_offset)
    )


def _object_name(obj: Any) -> str | None:
    if inspect.ismodule(obj):
        return obj.__name__
    module, name = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    return f"{module}.{name}" if module and name else None


# --------------------------------------------------------------------------- walking


class _NoCount(Exception):
    """The share counter met something it cannot evaluate (see :class:`_ShareCounter`)."""


class _Row:
    """One opaque item of a sequence whose length the share counter knows (a row of ``torch.randn(13, 5)``)."""

    __slots__ = ()


_ROW = _Row()


class _Obj:
    """An object of a class of the file built by the share counter: its class and the attributes its
    ``__init__`` set on ``self``."""

    __slots__ = ("cls", "attrs")

    def __init__(self, cls: str) -> None:
        self.cls, self.attrs = cls, {}


#: what the share counter evaluates, at most, for one (rank, world size): past it, the count is unknown
_COUNT_BUDGET = 20000
#: what the share counter evaluates, at most, in one file (20 counts at their full budget)
_FILE_COUNT_BUDGET = 20 * _COUNT_BUDGET
_COUNT_BUILTINS = frozenset(
    {"len", "range", "min", "max", "sum", "divmod", "int", "abs", "list", "tuple", "sorted", "enumerate", "zip"}
)
_COUNT_WORLD_NAMES = frozenset({"world", "world_size", "num_replicas", "num_processes", "nprocs"})
_COUNT_RANK_NAME = re.compile(r"(?:local_|global_|my_|proc_|process_)?rank(?:_id)?|process_index")
_COUNT_SHAPES = frozenset({"randn", "rand", "zeros", "ones", "empty", "full", "randint", "arange", "tensor"})


def _clip(text: str, width: int) -> str:
    """``text`` on one line, cut to ``width`` characters with an ellipsis."""
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def _loop_caps(loop: ast.For) -> list[ast.If]:
    """The ``if <test>: break`` statements a loop's body opens with (``if k >= max_iters: break``): they cap its
    trips."""
    caps = []
    for stmt in loop.body:
        if not (
            isinstance(stmt, ast.If) and not stmt.orelse and len(stmt.body) == 1 and isinstance(stmt.body[0], ast.Break)
        ):
            break
        caps.append(stmt)
    return caps


class _ShareCounter:
    """Evaluates, with the rank and the world size given as numbers, the expressions and the plain helpers of the
    file that build a rank's share of the data, to count the items of that share. Values are Python ints, bools,
    strings, lists, tuples and ranges; a tensor is a list of opaque rows (``torch.randint(0, 32, (13, 5))`` has 13).
    A name is read from the function's or the module's names assigned once (:attr:`_Analysis.values`), from a
    helper's parameters, or, for ``get_rank()``/``get_world_size()`` and names that say rank or world, from the
    numbers given. A helper of the file (not a method) is run statement by statement: assignments, ``for``,
    ``if``, ``append``/``extend``, ``return``. Anything else (a file, a random draw, an object, a loop that runs
    too long) raises :class:`_NoCount`: the count is then unknown, and lint says nothing (a proof, not a guess)."""

    def __init__(self, an: _Analysis, unit: _Unit, rank: int, world: int) -> None:
        self.an, self.unit, self.rank, self.world, self.steps = an, unit, rank, world, 0

    def _tick(self) -> None:
        self.steps += 1
        if self.steps > _COUNT_BUDGET:
            raise _NoCount

    def trips(self, loop: ast.For, scope: str | None, env: dict[str, Any]) -> int:
        """How many trips ``loop`` runs past its leading ``if ...: break`` caps (see :func:`_loop_caps`)."""
        value = self.value(loop.iter, scope, env, 0)
        caps = _loop_caps(loop)
        if not caps:
            return self._len(value, 0)
        n = 0
        for item in self._iterate(value):
            local = dict(env)
            self._bind(loop.target, item, local)
            if any(self._truth(self.value(cap.test, scope, local, 0)) for cap in caps):
                break
            n += 1
        return n

    def _len(self, value: Any, depth: int) -> int:
        if isinstance(value, (list, tuple, range, str)):
            return len(value)
        if isinstance(value, _Obj):  # a Dataset or Sampler of the file: its __len__
            func = next((self.an.table.get(f"{c}.__len__") for c in self.an._ancestors(value.cls)), None)
            if func is not None:
                done, result = self._block(func.node.body, func.key, {func.node.args.args[0].arg: value}, depth + 1)
                if done and isinstance(result, int):
                    return result
                raise _NoCount
            return len(self._iterate(value))  # an iterable without __len__: a loop over it runs once per item
        raise _NoCount

    def value(self, node: ast.AST, scope: str | None, env: dict[str, Any], depth: int) -> Any:
        self._tick()
        if depth > _MAX_DEPTH:
            raise _NoCount
        d = depth + 1
        if isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, (int, str, bool, float))):
            return node.value
        if isinstance(node, ast.Name):
            return self._name(node.id, scope, env, d)
        if isinstance(node, ast.Dict):  # `{0: 5, 1: 3}`: keys that are numbers or strings
            keys = [self.value(k, scope, env, d) if k is not None else None for k in node.keys]
            if not all(isinstance(k, (int, str)) for k in keys):
                raise _NoCount
            return {k: self._item(v, scope, env, d) for k, v in zip(keys, node.values)}
        if isinstance(node, (ast.List, ast.Tuple)):
            if any(isinstance(e, ast.Starred) for e in node.elts):
                raise _NoCount
            items = [self._item(e, scope, env, d) for e in node.elts]
            return items if isinstance(node, ast.List) else tuple(items)
        if isinstance(node, ast.BinOp):
            return self._binop(node.op, self.value(node.left, scope, env, d), self.value(node.right, scope, env, d))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Not)):
            operand = self.value(node.operand, scope, env, d)
            if isinstance(node.op, ast.Not):
                return not operand
            if not isinstance(operand, int):
                raise _NoCount
            return -operand
        if isinstance(node, ast.BoolOp):
            want = isinstance(node.op, ast.Or)  # evaluated left to right, stopping as Python does
            for v in node.values:
                if self._truth(self.value(v, scope, env, d)) == want:
                    return want
            return not want
        if isinstance(node, ast.Compare):
            return self._compare(node, scope, env, d)
        if isinstance(node, ast.IfExp):
            test = self.value(node.test, scope, env, d)
            if not isinstance(test, (int, bool)):
                raise _NoCount
            return self.value(node.body if test else node.orelse, scope, env, d)
        if isinstance(node, ast.Subscript):
            return self._subscript(node, scope, env, d)
        if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
            return self._comprehension(node, scope, env, d)
        if isinstance(node, ast.Attribute):
            base = self.value(node.value, scope, env, d)
            if isinstance(base, _Obj) and node.attr in base.attrs and base.attrs[node.attr] is not _NoCount:
                return base.attrs[node.attr]
            if isinstance(base, list) and node.attr == "shape":
                return (len(base),)
            raise _NoCount
        if isinstance(node, ast.Call):
            return self._call(node, scope, env, d)
        raise _NoCount

    def _item(self, node: ast.AST, scope: str | None, env: dict[str, Any], depth: int) -> Any:
        """An element of a list or tuple: unknown (:class:`_NoCount` itself, an error where it is read) when it
        cannot be evaluated, since the list's length does not depend on it."""
        try:
            return self.value(node, scope, env, depth)
        except _NoCount:
            if self.steps > _COUNT_BUDGET:
                raise
            return _NoCount

    def _name(self, name: str, scope: str | None, env: dict[str, Any], depth: int) -> Any:
        if name in env:
            value = env[name]
            if value is _NoCount:
                raise _NoCount
            return value
        for where in (scope, None) if scope is not None else (None,):
            value = self.an.values.get(where, {}).get(name)
            if value is not None:
                try:
                    return self.value(value, where, env if where == scope else {}, depth)
                except _NoCount:
                    if name in _COUNT_WORLD_NAMES or _COUNT_RANK_NAME.fullmatch(name):
                        break  # `local_rank = int(os.environ["LOCAL_RANK"])`: the rank, whatever reads it
                    raise
        if name in _COUNT_WORLD_NAMES:
            return self.world
        if _COUNT_RANK_NAME.fullmatch(name):
            return self.rank
        raise _NoCount

    @staticmethod
    def _binop(op: ast.operator, left: Any, right: Any) -> Any:
        numbers = isinstance(left, int) and isinstance(right, int)
        if isinstance(op, ast.Add) and (numbers or type(left) is type(right) and isinstance(left, (list, tuple))):
            return left + right
        if isinstance(op, ast.Mult) and isinstance(right, int) and (numbers or isinstance(left, (list, tuple))):
            if abs(right) > _COUNT_BUDGET:
                raise _NoCount
            return left * right
        if numbers and isinstance(op, ast.Sub):
            return left - right
        if numbers and isinstance(op, (ast.FloorDiv, ast.Mod)) and right:
            return left // right if isinstance(op, ast.FloorDiv) else left % right
        if numbers and isinstance(op, ast.Div) and right:
            return left / right
        raise _NoCount

    def _compare(self, node: ast.Compare, scope: str | None, env: dict[str, Any], depth: int) -> bool:
        left = self.value(node.left, scope, env, depth)
        for op, right_node in zip(node.ops, node.comparators):
            right = self.value(right_node, scope, env, depth)
            if left is _NoCount or right is _NoCount:
                raise _NoCount
            if isinstance(op, (ast.Is, ast.IsNot)) and (left is None or right is None):
                ok = (left is right) == isinstance(op, ast.Is)
            elif isinstance(op, (ast.In, ast.NotIn)):
                if not isinstance(right, (list, tuple, range, str)) or left is _NoCount or _NoCount in right:
                    raise _NoCount
                ok = (left in right) == isinstance(op, ast.In)
            elif isinstance(left, (int, float)) and isinstance(right, (int, float)):
                ok = {
                    ast.Eq: left == right,
                    ast.NotEq: left != right,
                    ast.Lt: left < right,
                    ast.LtE: left <= right,
                    ast.Gt: left > right,
                    ast.GtE: left >= right,
                }.get(type(op))  # type: ignore[assignment]
                if ok is None:
                    raise _NoCount
            else:
                raise _NoCount
            if not ok:
                return False
            left = right
        return True

    def _subscript(self, node: ast.Subscript, scope: str | None, env: dict[str, Any], depth: int) -> Any:
        base = self.value(node.value, scope, env, depth)
        if isinstance(base, dict) and not isinstance(node.slice, ast.Slice):
            key = self.value(node.slice, scope, env, depth)
            if not isinstance(key, (int, str)) or key not in base or base[key] is _NoCount:
                raise _NoCount
            return base[key]
        if not isinstance(base, (list, tuple, range, str)):
            raise _NoCount
        cut = node.slice
        if isinstance(cut, ast.Slice):
            parts = [None if p is None else self.value(p, scope, env, depth) for p in (cut.lower, cut.upper, cut.step)]
            if any(p is not None and not isinstance(p, int) for p in parts) or parts[2] == 0:
                raise _NoCount
            return base[slice(*parts)]
        index = self.value(cut, scope, env, depth)
        if not isinstance(index, int) or not -len(base) <= index < len(base):
            raise _NoCount
        return base[index]

    def _comprehension(
        self, node: ast.ListComp | ast.GeneratorExp, scope: str | None, env: dict[str, Any], depth: int
    ) -> list:
        out: list = []

        def run(level: int, inner: dict[str, Any]) -> None:
            if level == len(node.generators):
                out.append(self._item(node.elt, scope, inner, depth))
                return
            gen = node.generators[level]
            if gen.is_async:
                raise _NoCount
            for item in self._iterate(self.value(gen.iter, scope, inner, depth)):
                bound = dict(inner)
                self._bind(gen.target, item, bound)
                if all(self._truth(self.value(t, scope, bound, depth)) for t in gen.ifs):
                    run(level + 1, bound)

        run(0, dict(env))
        return out

    def _iterate(self, value: Any) -> list:
        if isinstance(value, _Obj):  # an iterable of the file: what its __iter__ yields or returns an iterator over
            func = next(
                (self.an.table[k] for c in self.an._ancestors(value.cls) if (k := f"{c}.__iter__") in self.an.table),
                None,
            )
            if func is None:
                raise _NoCount
            value = self._call_with(func, {func.node.args.args[0].arg: value}, 0)
        if not isinstance(value, (list, tuple, range, str)) or len(value) > _COUNT_BUDGET:
            raise _NoCount
        self.steps += len(value)
        if self.steps > _COUNT_BUDGET:
            raise _NoCount
        return list(value)

    @staticmethod
    def _truth(value: Any) -> bool:
        if isinstance(value, (_Row, _Obj)) or value is _NoCount:
            raise _NoCount
        return bool(value)

    def _bind(self, target: ast.AST, value: Any, env: dict[str, Any], scope: str | None = None, depth: int = 0) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = value
        elif isinstance(target, ast.Subscript) and not isinstance(target.slice, ast.Slice):
            held = self.value(target.value, scope, env, depth)  # `self._state["file_idx"] = 0`
            key = self.value(target.slice, scope, env, depth)
            if isinstance(held, dict) and isinstance(key, (int, str)):
                held[key] = value
            elif isinstance(held, list) and isinstance(key, int) and -len(held) <= key < len(held):
                held[key] = value
            else:
                raise _NoCount
        elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
            owner = env.get(target.value.id)
            if not isinstance(owner, _Obj):
                raise _NoCount
            owner.attrs[target.attr] = value
        elif isinstance(target, (ast.Tuple, ast.List)) and value is _NoCount:
            for t in target.elts:
                self._bind(t, _NoCount, env)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if not isinstance(value, (list, tuple)) or len(value) != len(target.elts):
                raise _NoCount
            for t, v in zip(target.elts, value):
                self._bind(t, v, env)
        else:
            raise _NoCount

    def _call(self, node: ast.Call, scope: str | None, env: dict[str, Any], depth: int) -> Any:
        name = _terminal(node.func)
        if name in ("DataLoader", "DistributedSampler") and node.args:
            return self._loader(name, node, scope, env, depth)
        if name == "TensorDataset" and node.args and not node.keywords:  # as long as its first tensor
            return list(self._rows(self.value(node.args[0], scope, env, depth)))
        if isinstance(node.func, ast.Name):
            key = self.an._callee(node.func, None, self.unit)
            init = self.an.table.get(key) if key is not None and key.endswith(".__init__") else None
            if init is not None and init.self_class is not None:
                return self._build(init.self_class, node, scope, env, depth)
            if node.func.id in self.an.class_nodes:  # a class of the file without an __init__ of its own
                if node.args or node.keywords or not self._plain_class(node.func.id):
                    raise _NoCount
                return _Obj(node.func.id)
        if name == "len" and isinstance(node.func, ast.Name) and len(node.args) == 1 and not node.keywords:
            return self._len(self.value(node.args[0], scope, env, depth), depth)
        if node.keywords and not all(k.arg in ("dim", "generator", "dtype", "device") for k in node.keywords):
            if not (isinstance(node.func, ast.Name) and self._helper(node, scope) is not None):
                if not isinstance(node.func, ast.Attribute) or not isinstance(
                    self.value(node.func.value, scope, env, depth), _Obj
                ):
                    raise _NoCount
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise _NoCount
        if name in ("get_rank", "get_local_rank", "get_global_rank") and not node.args:
            return self.rank
        if name == "get_world_size" and not node.args:
            return self.world
        helper = self._helper(node, scope) if isinstance(node.func, ast.Name) else None
        if helper is not None:
            return self._run(helper, node, scope, env, depth)
        args = [self.value(a, scope, env, depth) for a in node.args]
        if isinstance(node.func, ast.Name) and name in _COUNT_BUILTINS:
            return self._builtin(name, args)
        if isinstance(node.func, ast.Attribute):
            owner = _dotted(node.func.value) or ""
            if owner in ("math",) and name in ("ceil", "floor") and len(args) == 1:
                return math.ceil(args[0]) if name == "ceil" else math.floor(args[0])
            if owner in ("torch", "np", "numpy") and name in _COUNT_SHAPES:
                return self._shaped(name, args)
            if owner in ("torch", "np", "numpy") and name in ("chunk", "tensor_split", "array_split", "split"):
                if not args:
                    raise _NoCount
                return self._pieces(name, args[0], args[1:])
            if owner not in ("torch", "np", "numpy", "math"):
                base = self.value(node.func.value, scope, env, depth)
                if isinstance(base, _Obj):  # a method of a class of the file, run with `self` the object
                    method = next(
                        (
                            self.an.table[k]
                            for c in self.an._ancestors(base.cls)
                            if (k := f"{c}.{name}") in self.an.table
                        ),
                        None,
                    )
                    if method is None:
                        raise _NoCount
                    return self._run(method, node, scope, env, depth, base, built=False)
                if name in ("chunk", "tensor_split", "split") and isinstance(base, list):
                    return self._pieces(name, base, args)
                if name in ("tolist", "clone", "contiguous", "copy") and not args and isinstance(base, list):
                    return list(base)
                if name == "size" and args == [0] and isinstance(base, list):
                    return len(base)
        raise _NoCount

    def _loader(self, name: str, node: ast.Call, scope: str | None, env: dict[str, Any], depth: int) -> list:
        """A torch ``DataLoader`` as its batches (``len(sampler or dataset)`` items, ``batch_size`` a batch, the
        last one dropped with ``drop_last=True``), a ``DistributedSampler`` as its rank's indices (padded to
        ``ceil(n / world)``, or cut to ``n // world`` with ``drop_last=True``)."""
        given = {k.arg: k.value for k in node.keywords}
        if name == "DistributedSampler":  # DistributedSampler(dataset, num_replicas, rank, shuffle, seed, drop_last)
            given.update(zip(("num_replicas", "rank", "shuffle", "seed", "drop_last"), node.args[1:]))
        if (
            None in given
            or (len(node.args) > 1 and name != "DistributedSampler")
            or set(given)
            - {
                "batch_size",
                "sampler",
                "drop_last",
                "shuffle",
                "num_workers",
                "collate_fn",
                "pin_memory",
                "num_replicas",
                "rank",
                "seed",
                "generator",
            }
        ):
            raise _NoCount

        def read(key: str, default: Any) -> Any:
            return self.value(given[key], scope, env, depth) if key in given else default

        drop = read("drop_last", False)
        if not isinstance(drop, bool):
            raise _NoCount
        if name == "DistributedSampler":
            n, world = self._len(self.value(node.args[0], scope, env, depth), depth), read("num_replicas", self.world)
            if not isinstance(world, int) or world <= 0:
                raise _NoCount
            return [_ROW] * (n // world if drop and n % world else -(-n // world))
        source = given.get("sampler", node.args[0])
        n, size = self._len(self.value(source, scope, env, depth), depth), read("batch_size", 1)
        if not isinstance(size, int) or size <= 0:
            raise _NoCount
        return [_ROW] * (n // size if drop else -(-n // size))

    def _plain_class(self, cls: str) -> bool:
        """Whether every base of ``cls`` is a class of the file or ``object`` (no library ``__init__`` runs)."""
        node = self.an.class_nodes[cls][0]
        return all(
            isinstance(b, ast.Name) and (b.id == "object" or (b.id in self.an.class_nodes and self._plain_class(b.id)))
            for b in node.bases
        )

    def _build(self, cls: str, node: ast.Call, scope: str | None, env: dict[str, Any], depth: int) -> _Obj:
        """An object of a class of the file, its ``__init__`` run (a class without one in the file: unknown)."""
        init = next(
            (self.an.table.get(f"{c}.__init__") for c in self.an._ancestors(cls) if f"{c}.__init__" in self.an.table),
            None,
        )
        if init is None:
            raise _NoCount
        obj = _Obj(cls)
        self._run(init, node, scope, env, depth, obj)
        return obj

    @staticmethod
    def _rows(value: Any) -> list:
        if not isinstance(value, list):
            raise _NoCount
        return value

    def _builtin(self, name: str, args: list) -> Any:
        if name == "len" and len(args) == 1 and isinstance(args[0], (list, tuple, range, str)):
            return len(args[0])
        if name == "range" and 1 <= len(args) <= 3 and all(isinstance(a, int) for a in args):
            r = range(*args)
            if len(r) > _COUNT_BUDGET:
                raise _NoCount
            return r
        if name in ("min", "max"):
            items = args[0] if len(args) == 1 else args
            if not isinstance(items, (list, tuple, range)) or not items or not all(isinstance(i, int) for i in items):
                raise _NoCount
            return min(items) if name == "min" else max(items)
        if name == "sum" and len(args) == 1 and all(isinstance(i, int) for i in self._iterate(args[0])):
            return sum(args[0])
        if name == "divmod" and len(args) == 2 and all(isinstance(a, int) for a in args) and args[1]:
            return divmod(*args)
        if name in ("int", "abs") and len(args) == 1 and isinstance(args[0], (int, float)):
            return int(args[0]) if name == "int" else abs(args[0])
        if name in ("list", "tuple", "sorted") and len(args) == 1:
            items = self._iterate(args[0])
            if name == "sorted":
                if not all(isinstance(i, int) for i in items):
                    raise _NoCount
                return sorted(items)
            return items if name == "list" else tuple(items)
        if name == "enumerate" and len(args) == 1:
            return [(i, v) for i, v in enumerate(self._iterate(args[0]))]
        if name == "zip" and args:
            return [tuple(t) for t in zip(*(self._iterate(a) for a in args))]
        raise _NoCount

    def _shaped(self, name: str, args: list) -> list:
        if name == "arange":
            return list(self._builtin("range", args))
        if name == "tensor":
            if len(args) != 1 or not isinstance(args[0], list):
                raise _NoCount
            return list(args[0])
        if name == "randint":
            shape = args[2] if len(args) == 3 else args[1] if len(args) == 2 else None
        elif name == "full":
            shape = args[0] if args else None
        else:
            shape = args[0] if len(args) == 1 else args[0] if args else None
        if isinstance(shape, (tuple, list)) and shape:
            shape = shape[0]
        if not isinstance(shape, int) or not 0 <= shape <= _COUNT_BUDGET:
            raise _NoCount
        return [_ROW] * shape

    def _pieces(self, name: str, base: Any, args: list) -> list:
        if not isinstance(base, list) or len(args) != 1:
            raise _NoCount
        n, k = len(base), args[0]
        if name == "split" and isinstance(k, list) and all(isinstance(s, int) for s in k):
            if sum(k) != n:
                raise _NoCount
            starts = [sum(k[:i]) for i in range(len(k))]
            return [base[s : s + size] for s, size in zip(starts, k)]
        if not isinstance(k, int) or k <= 0:
            raise _NoCount
        if name == "split":
            return [base[i : i + k] for i in range(0, n, k)]
        if name == "chunk":  # torch.chunk: pieces of ceil(n / k), possibly fewer than k
            size = -(-n // k) if n else 0
            return [base[i : i + size] for i in range(0, n, size)] if size else []
        per, extra = divmod(n, k)  # tensor_split / array_split: the first n % k pieces one longer
        starts = [i * per + min(i, extra) for i in range(k + 1)]
        return [base[starts[i] : starts[i + 1]] for i in range(k)]

    def _helper(self, node: ast.Call, scope: str | None) -> _Func | None:
        key = self.an._callee(node.func, None, self.unit)
        func = self.an.table.get(key) if key is not None else None
        if func is None or func.self_class is not None or isinstance(func.node, ast.AsyncFunctionDef):
            return None
        return func

    def _run(
        self,
        func: _Func,
        node: ast.Call,
        scope: str | None,
        env: dict[str, Any],
        depth: int,
        obj: _Obj | None = None,
        built: bool = True,
    ) -> Any:
        args = func.node.args
        params = list(args.args)
        local: dict[str, Any] = {}
        if obj is not None:
            if not params:
                raise _NoCount
            local[params[0].arg] = obj
            params = params[1:]
        if args.vararg or args.kwarg or args.posonlyargs or len(node.args) > len(params):
            raise _NoCount
        given = {p.arg: a for p, a in zip(params, node.args)}
        given.update({k.arg: k.value for k in node.keywords if k.arg})
        if any(k.arg is None for k in node.keywords):
            raise _NoCount
        defaults = dict(zip([a.arg for a in args.args][len(args.args) - len(args.defaults) :], args.defaults))
        defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
        for param in [a.arg for a in (*params, *args.kwonlyargs)]:
            try:
                if param in given:
                    local[param] = self.value(given[param], scope, env, depth)
                elif param in defaults:
                    local[param] = self.value(defaults[param], None, {}, depth)
                else:
                    raise _NoCount
            except _NoCount:
                local[param] = _NoCount  # read only if the helper uses it
        return self._call_with(func, local, depth, obj if built else None)

    def _call_with(self, func: _Func, local: dict[str, Any], depth: int, obj: _Obj | None = None) -> Any:
        """Runs ``func``'s body with its parameters bound in ``local``: its return value, the list of what it
        yields (a generator, run to its end: one that never ends runs past the budget), or ``obj`` (an
        ``__init__``)."""
        generator = any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in _own_nodes(func.node.body))
        yields: list | None = [] if generator else None
        done, result = self._block(func.node.body, func.key, local, depth, yields)
        if obj is not None:
            return obj
        if yields is not None:
            return yields
        return result  # None when no return ran, as in Python

    def _block(
        self, stmts: list[ast.stmt], scope: str, env: dict[str, Any], depth: int, yields: list | None = None
    ) -> tuple[bool, Any]:
        """Runs ``stmts`` in ``env``: (whether a ``return`` ran, its value); a generator's yields go to ``yields``."""
        for stmt in stmts:
            self._tick()
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, (ast.Yield, ast.YieldFrom)):
                if yields is None:
                    raise _NoCount
                inner = stmt.value.value
                if isinstance(stmt.value, ast.YieldFrom):
                    yields.extend(self._iterate(self.value(inner, scope, env, depth)))  # type: ignore[arg-type]
                else:
                    yields.append(None if inner is None else self._item(inner, scope, env, depth))
                if len(yields) > _COUNT_BUDGET:
                    raise _NoCount
                continue
            if isinstance(stmt, ast.Return):
                return True, None if stmt.value is None else self.value(stmt.value, scope, env, depth)
            if isinstance(stmt, ast.Assign):
                try:
                    value = self.value(stmt.value, scope, env, depth)
                except _NoCount:
                    value = _NoCount  # unknown: an error only where it is read
                for target in stmt.targets:
                    self._bind(target, value, env, scope, depth)
            elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)) and stmt.value is not None:
                value = self.value(stmt.value, scope, env, depth)
                if isinstance(stmt, ast.AugAssign):
                    if isinstance(stmt.target, ast.Name):
                        held = self._name(stmt.target.id, scope, env, depth)
                    else:
                        held = self.value(stmt.target, scope, env, depth)
                    value = self._binop(stmt.op, held, value)
                self._bind(stmt.target, value, env, scope, depth)
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                continue
            elif (
                isinstance(stmt, ast.Expr)
                and isinstance(stmt.value, ast.Call)
                and _terminal(stmt.value.func) == "print"
            ):
                continue
            elif (
                isinstance(stmt, ast.Expr)
                and isinstance(stmt.value, ast.Call)
                and isinstance(stmt.value.func, ast.Attribute)
                and stmt.value.func.attr == "__init__"
                and isinstance(stmt.value.func.value, ast.Call)
                and _terminal(stmt.value.func.value.func) == "super"
            ):
                continue
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                call = stmt.value
                target = call.func.value if isinstance(call.func, ast.Attribute) else None
                if target is not None and isinstance(self.value(target, scope, env, depth), _Obj):
                    self.value(call, scope, env, depth)  # a method of an object of the file: run for its effects
                    continue
                if not (
                    isinstance(target, (ast.Name, ast.Attribute))
                    and call.func.attr in ("append", "extend")  # type: ignore[union-attr]
                    and len(call.args) == 1
                ):
                    raise _NoCount
                held = self.value(target, scope, env, depth)
                if not isinstance(held, list) or (isinstance(target, ast.Name) and target.id not in env):
                    raise _NoCount
                item = self.value(call.args[0], scope, env, depth)
                if call.func.attr == "append":  # type: ignore[union-attr]
                    held.append(item)
                else:
                    held.extend(self._iterate(item))
            elif isinstance(stmt, ast.If):
                test = self.value(stmt.test, scope, env, depth)
                done, result = self._block(stmt.body if self._truth(test) else stmt.orelse, scope, env, depth, yields)
                if done:
                    return True, result
            elif isinstance(stmt, ast.For) and not stmt.orelse:
                if any(isinstance(n, (ast.Break, ast.Continue)) for n in _own_nodes(stmt.body)):
                    raise _NoCount
                for item in self._iterate(self.value(stmt.iter, scope, env, depth)):
                    self._bind(stmt.target, item, env)
                    done, result = self._block(stmt.body, scope, env, depth, yields)
                    if done:
                        return True, result
            elif isinstance(stmt, ast.While) and not stmt.orelse:
                if any(isinstance(n, (ast.Break, ast.Continue)) for n in _own_nodes(stmt.body)):
                    raise _NoCount
                while self._truth(self.value(stmt.test, scope, env, depth)):
                    self._tick()
                    done, result = self._block(stmt.body, scope, env, depth, yields)
                    if done:
                        return True, result
            elif isinstance(stmt, ast.Pass):
                continue
            elif _grad_mode_only(stmt):  # lintrecall32: `with torch.no_grad():` changes no value it counts
                done, result = self._block(stmt.body, scope, env, depth, yields)  # type: ignore[attr-defined]
                if done:
                    return True, result
            else:
                raise _NoCount
        return False, None


#: lintrecall32: context managers that switch autograd's mode and nothing else (no value, length or order of the
#: data changes inside them).
_GRAD_MODES = frozenset({"no_grad", "inference_mode", "enable_grad"})


def _grad_mode_only(stmt: ast.stmt) -> bool:
    """Whether ``stmt`` is ``with torch.no_grad():`` (or ``inference_mode()``/``enable_grad()``, no ``as``)."""
    return isinstance(stmt, ast.With) and all(
        item.optional_vars is None
        and isinstance(item.context_expr, ast.Call)
        and not item.context_expr.args
        and not item.context_expr.keywords
        and _dotted(item.context_expr.func) in {f"torch.{m}" for m in _GRAD_MODES} | _GRAD_MODES
        for item in stmt.items
    )


class _Walker:
    """Builds the collective trace of one scope and flags unbalanced parts of it."""

    def __init__(self, an: _Analysis, unit: _Unit, taint: set[str], self_class: str | None, scope: str | None) -> None:
        self.an = an
        self.unit = unit
        self.taint = taint
        self.self_class = self_class
        self.scope = scope
        self.laundered = an.laundered.get(scope, {})
        fixed = an.constant_rank_params(scope)
        if fixed:  # a rank-named parameter every call hands a constant: the same on every rank from the start
            self.laundered = {**self.laundered, **dict.fromkeys(fixed, -1)}
        self.fed: dict[str, tuple[str, str, str]] = {}  # metric -> (loop, line of its update, its list states)
        self.first_raised: set[int] = set()  # raises a main_process_first finding explains (see _first_raise)
        self.caught: set[int] = set()  # raises a handler of their `try` catches and goes on from (review62b C1)
        self.handling = 0  # except handlers the walk is inside
        self.loops = 0  # loops of this scope the walk is inside
        self.local: dict[str, str] = {}
        # a helper's parameters while its count is judged: the argument and the caller's state (_yielded_length)
        self.bound: dict[str, tuple[ast.expr, tuple]] = {}
        self._local_values()

    def _module_output(self, call: ast.Call) -> bool:
        """Whether ``call`` runs a model's forward: a DDP/FSDP-wrapped model, or an object of a class of the
        file called like a torch module (``model(ids)``, its ``forward``)."""
        written = _dotted(call.func)
        if written is None:
            return False
        if written in self.an.ddp.get(self.scope, {}):
            return True  # data parallel: each rank feeds its own batch
        callee = self.an._callee(call.func, self.self_class, self.unit)
        if callee is not None:
            return callee in self.an.local_funcs
        target = self.an._indirect(call.func, self.self_class, self.scope)
        if target is None or target.rpartition(".")[2] not in ("forward", "__call__"):
            return False
        # A module of the file (sharded or tensor-parallel) computes the same output on every rank from the same
        # input: its output is this rank's own only when its input is (a rank-dependent value, here or handed
        # to this function's parameter by a caller).
        fed = self.an.rank_params.get(self.scope or "", set())
        args = [*call.args, *(k.value for k in call.keywords)]
        return any(
            self.an.mentions_rank(a, self.taint | fed, self.laundered)
            or any(isinstance(n, ast.Name) and n.id in self.local for n in ast.walk(a))
            for a in args
        )

    def _local_values(self) -> dict[str, str]:
        """Names of this function that hold what this rank's model computed from this rank's inputs (its
        output, the tokens picked from it, a loss): name -> where it comes from. A test on them can come out
        differently on different ranks (each rank's own sequence reaches its end-of-sequence token at its own
        step) unless they went through a broadcast or an all-reduce first (see ``laundered``)."""
        func = self.an.table.get(self.scope) if self.scope is not None else None
        if func is None:
            return {}
        own = list(_own_nodes(func.node.body))
        pairs = _assignments(own)
        local = self.local  # filled in place: a forward fed a name found local is local too
        for names, loader, line in _batch_targets(own):
            for name in names:
                local.setdefault(
                    name, f"the batch `for … in {self.unit.text(loader)[:40]}` at line {line + self.unit.offset}"
                )
        for _ in range(8):
            grew = False
            for names, value, _ in pairs:
                source = self._local_source(value, local)
                for name in names:
                    if source and name not in local:
                        local[name], grew = source, True
            if not grew:
                break
        return local

    def _agreed(self, call: ast.Call) -> bool:
        """Whether a call's result is the same on every rank whatever it is handed: a framework call that returns
        the same result everywhere (``accelerator.reduce``), or a function of the file that reaches a collective
        and returns what the collective agreed on (``should_skip(loss)`` all-reducing a flag)."""
        if id(call) in self.an.same_result_calls:
            return True
        target = self.an._callee(call.func, self.self_class, self.unit)
        return (
            target is not None
            and target in self.an.reach
            and target not in self.an.rank_returns
            and target not in self.an.local_funcs
        )

    def _local_source(self, expr: ast.AST, local: dict[str, str], at: int = 0) -> str | None:
        """Where ``expr``'s rank-local model output comes from, or None. ``at``: the line the test is evaluated
        after (a ``while`` test runs again after its body: a name agreed inside the body is agreed there)."""
        stack = [expr]
        while stack:
            node = stack.pop()
            if isinstance(node, ast.Call) and self._agreed(node):
                continue
            stack.extend(ast.iter_child_nodes(node))
            if isinstance(node, ast.Call) and self._module_output(node):
                return f"`{self.unit.text(node)[:40]}` at line {node.lineno + self.unit.offset}"
            if isinstance(node, ast.Name) and node.id in local:
                if self.laundered and node.id in self.laundered and max(node.lineno, at) > self.laundered[node.id]:
                    continue
                return local[node.id]
        return None

    def _local_test(self, test: ast.expr, at: int = 0) -> str | None:
        """The text to report for a loop exit or loop condition that tests this rank's own model output."""
        if self.an.mentions_rank(test, self.taint, self.laundered):
            return None
        source = self._local_source(test, self.local, at) or _grad_presence(test)
        if source is None:
            return None
        text = self.unit.text(test)
        self.an.local_notes[text] = source
        if not self.loops:
            self.an.local_returns.add(text)
        return text

    def flag(
        self,
        items: Iterable[_Item],
        reason: str,
        cond: str,
        leave: _Leave | None = None,
        within: tuple[ast.expr | None, bool] | None = None,
        detail: tuple[str, ...] = (),
    ) -> None:
        """Report the collectives of ``items``; ``within``: the ``if`` test they sit under and the branch,
        so that a collective on a subgroup holding exactly the ranks that take the branch stays quiet."""
        for site in self._unflagged(items):
            if within is not None and within[0] is not None and self._group_agrees(site, within[0]):
                continue
            if within is not None and within[0] is not None and self._group_made_in_branch(site, *within):
                continue
            if within is not None and within[0] is not None and self._local_group_agrees(site, within[0]):
                continue
            self.an.flag(self.unit, site, reason, cond, leave, detail)

    def _unflagged(self, items: Iterable[_Item]) -> Iterator[_Site]:
        """The sites of ``items`` (as :func:`_sites`, in order) not flagged already (by an inner ``if`` of an
        ``elif`` chain: the checks of :meth:`flag` change nothing for them). An item whose every site was found
        is marked, and skipped with all under it until a finding is withdrawn: each case of a 1,600-case chain
        walked its whole tail (quadratic in the cases)."""
        found = self.an.found
        frames: list[tuple[_Item | None, Iterator[_Item], list[bool]]] = [(None, iter(items), [True])]
        while frames:
            owner, rest, done = frames[-1]
            item = next(rest, None)
            if item is None:
                frames.pop()
                if owner is not None and done[0]:
                    owner.__dict__["_found_at"] = found.removed
                elif owner is not None:
                    frames[-1][2][0] = False
                continue
            if item.__dict__.get("_found_at") == found.removed:
                continue
            mine = [True]
            if item.site is not None and id(item.site.node) not in found:
                yield item.site
                mine[0] = id(item.site.node) in found
            frames.append((item, itertools.chain(item.body, item.orelse), mine))

    def _group_made_in_branch(self, site: _Site, test: ast.expr, taken: bool) -> bool:
        """Whether ``site`` runs on ``group=g`` where ``g`` is made (``g = new_group(...)``) in the same branch: the
        finding is that ``new_group`` call, which torch wants every rank to make, and not the use of the group by
        the ranks that made it (review58b: `if rank in (0, 1): g = new_group([0, 1]); barrier(group=g)` was two
        findings, the second saying the others "never call it, so it waits", of a barrier only members make)."""
        group = next((k.value for k in site.node.keywords if k.arg == "group"), None)
        if not isinstance(group, ast.Name) or self.scope not in self.an.table:
            return False
        for node in ast.walk(self.an.table[self.scope].node):
            if isinstance(node, ast.If) and node.test is test:
                branch = node.body if taken else node.orelse
                return any(
                    isinstance(stmt, ast.Assign)
                    and any(isinstance(t, ast.Name) and t.id == group.id for t in stmt.targets)
                    and isinstance(stmt.value, ast.Call)
                    and _terminal(stmt.value.func) in _GROUP_MAKING
                    for stmt in branch
                )
        return False

    def _local_group_agrees(self, site: _Site, test: ast.expr) -> bool:
        """Whether ``site`` is ``new_group(ranks, use_local_synchronization=True)`` made exactly by its members
        (the ranks that take the branch of ``test``, run on sample worlds): torch's docstring says non-members need
        not call it, and such a group is named by a hash of its ranks without advancing the group counter
        (distributed_c10d.py, _process_group_name), so the ranks that skip it number later groups alike
        (review81l C3)."""
        call = site.node
        if not (isinstance(call, ast.Call) and _terminal(call.func) == "new_group"):
            return False
        local = next((k.value for k in call.keywords if k.arg == "use_local_synchronization"), None)
        if not (isinstance(local, ast.Constant) and local.value is True):
            return False
        if self.scope is not None and self.scope not in self.an.table:
            return False
        if self.scope is None:
            func = _Func(_TOP, _module_function(self.unit.tree), self.unit, None, None)
        else:
            func = self.an.table[self.scope]
        return _Ranks(self.an, func).agrees(test, call)

    def _group_agrees(self, site: _Site, test: ast.expr) -> bool:
        """Whether ``site`` is a torch.distributed collective on a ``group=`` whose members all take the
        branch together: decided by running the enclosing function on sample world sizes (see _Ranks)."""
        call = site.node
        if self.scope is not None and self.scope not in self.an.table:
            return False
        group = next((k.value for k in call.keywords if k.arg == "group"), None)
        if site.callee is not None:
            group = self._helper_group(call)
        if group is None:
            return False
        if self.scope is None:  # review79l C1: a script's top level, run by the interpreter as a function's body
            func = _Func(_TOP, _module_function(self.unit.tree), self.unit, None, None)
        else:
            func = self.an.table[self.scope]
        return _Ranks(self.an, func).agrees(test, group)

    def _helper_group(self, call: ast.Call) -> ast.expr | None:
        """For a call of a function of the file whose every collective runs on ``group=<one of its
        parameters>`` (vLLM's ``tensor_model_parallel_gather(x, tp_group)``), the argument this call hands to
        that parameter: the group the helper's collectives use; or, when they all run on one group the helper
        looks up from the module's own names (Megatron's ``group=get_data_parallel_group()``), that lookup."""
        found = self.an.classify(call, self.unit, self.self_class, self.scope)
        helper = self.an.table.get(found.target) if found is not None and found.kind == "call" else None
        if helper is None:
            return None
        params = [a.arg for a in helper.node.args.args]
        skip = 1 if params[:1] in (["self"], ["cls"]) else 0
        bound = {
            t.id
            for n in _own_nodes(helper.node.body)
            for t in ast.walk(n)
            if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)
        }
        used: set[str] = set()
        shared: dict[str, ast.expr] = {}  # a group the helper looks up itself: `group=get_data_parallel_group()`
        for node in _own_nodes(helper.node.body):
            if not isinstance(node, ast.Call):
                continue
            inner = self.an.classify(node, helper.unit, helper.self_class, helper.key)
            if inner is None:
                continue
            if inner.kind != "coll":
                if inner.target in self.an.reach:
                    return None  # reaches collectives through another function: not followed
                continue
            group = next((k.value for k in node.keywords if k.arg == "group"), None)
            if isinstance(group, ast.Name) and group.id in params[skip:]:
                used.add(group.id)
            elif (
                group is not None
                and helper.unit is self.unit
                and not any(isinstance(n, ast.Name) and (n.id in params or n.id in bound) for n in ast.walk(group))
            ):  # built only from the module's own names: the caller's scope sees the same ones
                shared[ast.unparse(group)] = group
            else:
                return None
        if shared and not used and len(shared) == 1:
            return next(iter(shared.values()))
        if len(used) != 1 or shared:
            return None
        [param] = used
        index = params[skip:].index(param)
        if index < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args[: index + 1]):
            return call.args[index]
        return next((k.value for k in call.keywords if k.arg == param), None)

    # -- statements

    def block(self, stmts: list[ast.stmt], end: str | None) -> list[_Item]:
        """Trace of a block; ``end`` is how falling off its end leaves (function/loop body)."""
        items: list[_Item] = []
        leave: _Leave | None = None
        for index, stmt in enumerate(stmts):
            made = self._stmt(stmt)
            for position, item in enumerate(made):
                if leave is not None:
                    self.flag([item], "early-exit", leave.cond, leave)
                elif item.dynamic and end != "continue" and index == len(stmts) - 1 and position == len(made) - 1:
                    pass  # the block's last item: no item after it to flag, so whether ranks leave at it is not
                    # needed (an elif chain's every case asked it of the rest of the chain, quadratic in the cases)
                elif item.dynamic:
                    leave = self._escape(item)
                    if leave is not None and leave.exit is not None and id(leave.exit.node) in self.first_raised:
                        leave = None
                    if leave is not None and end == "continue" and leave.statuses & {"break", "return"}:
                        self.flag(items, "early-exit", leave.cond, leave)
                items.append(item)
        if self._balanced(items, end):
            self.an.retract(items)
        return items

    def _stmts(self, stmts: list[ast.stmt]) -> list[_Item]:
        return [item for stmt in stmts for item in self._stmt(stmt)]

    def _stmt(self, stmt: ast.stmt) -> list[_Item]:
        if isinstance(stmt, _SCOPES):
            return []
        if isinstance(stmt, ast.If):
            test = self._expr(stmt.test)
            if self._spelled_assert(stmt):
                return test  # `if bad: raise XError(...)`: an assert written out, which lint takes as asserts
            if self.handling and _reraises(stmt.body) and not stmt.orelse:
                return test  # `if "out of memory" not in str(e): raise` in a handler: the error was going to end
                # the rank anyway (round29's fairseq twin); the raise is a crash, not a rank leaving early
            if self.an.never_true(stmt.test, self.self_class):
                return test + self.block(stmt.orelse, None)  # a switch the file never turns on: the body never runs
            body, orelse = self.block(stmt.body, None), self.block(stmt.orelse, None)
            leaves = _leaves_loop(stmt.body + stmt.orelse)
            local = self._local_test(stmt.test) if leaves or any(i.site for i in _walk_items(body + orelse)) else None
            if local is not None:  # a loop exit each rank decides from its own data
                return test + [self._if(None, body, orelse, text=local, rank=True)]
            return test + [self._if(stmt.test, body, orelse)]
        if isinstance(stmt, (ast.For, ast.AsyncFor)):
            head = self._expr(stmt.iter) + self._dunders(stmt)  # a new iterator over a DataPipe loader
            self.loops += 1
            try:
                body = self.block(stmt.body, "continue")
            finally:
                self.loops -= 1
            orelse = self.block(stmt.orelse, None)
            if self._generator(stmt.iter):
                # a generator of the file runs its body (and its collectives) once per item, not at the call
                loop = self._loop(stmt.iter, head + body, orelse)
                self._note_fed(stmt.body, loop)
                return [loop]
            loop = self._loop(stmt.iter, body, orelse)
            self._counted_uneven(stmt, loop)
            self._note_fed(stmt.body, loop)
            return head + [loop]
        if isinstance(stmt, ast.While):
            head = self._expr(stmt.test)
            self.loops += 1
            try:
                body = self.block(stmt.body, "continue")
            finally:
                self.loops -= 1
            orelse = self.block(stmt.orelse, None)
            local = self._local_test(stmt.test, stmt.end_lineno or 0)
            loop = self._loop(stmt.test, head + body, orelse, local=local)
            self._note_fed(stmt.body, loop)
            return head + [loop]
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            self._first_raise(stmt)
            head = [i for w in stmt.items for i in self._expr(w.context_expr)]
            body = self._stmts(stmt.body)
            lock = next((text for w in stmt.items if (text := self._file_lock(w.context_expr))), None)
            if lock:
                self.flag(body, "lock", lock)
            suppressed = next((w.context_expr for w in stmt.items if self._suppresses(w.context_expr)), None)
            if suppressed is not None:  # like ``try: ... except OSError: pass`` (round 42's sglang probe)
                after = _after_own_work(stmt.body)
                line = str(stmt.lineno + self.unit.offset)
                swallowed = [i for i in _walk_items(body) if i.site is not None and id(i.site.node) in after]
                self.flag(swallowed, "suppress", self.unit.text(suppressed), detail=(line, line))
            first = next((w.context_expr for w in stmt.items if _main_first(w.context_expr)), None)
            if first is not None:  # the main process makes these while the others wait in the opening barrier
                ordered = [
                    item
                    for item in _walk_items(body)
                    if item.site is not None and not _BARRIER_LIKE.search(item.site.collective.rsplit(" -> ", 1)[-1])
                ]
                self.flag(ordered, "main-first", self.unit.text(first))
            return head + body
        if isinstance(stmt, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            # In a loop, an exception comes from the item in hand (a rank's own batch): a handler that skips
            # the rest of the iteration runs on the ranks whose data raised, not on every rank.
            self.caught |= _caught_raises(stmt) | self._caught_calls(stmt)
            per = [self._stmt(s) for s in stmt.body]
            body = [item for items in per for item in items]
            orelse = self._stmts(stmt.orelse)
            skipped = _after_raising(stmt.body, per, self._works_before_collective)
            handlers, mirrored = [], False
            for h in stmt.handlers:
                text = f"except {self.unit.text(h.type) if h.type else ''}".strip()
                self.handling += 1
                try:
                    traced = self.block(h.body, None)
                finally:
                    self.handling -= 1
                handlers.append(self._if(None, traced, [], text=text, rank=self._handler_rank(stmt, h)))
                if skipped and _op_keys(traced) == _op_keys(skipped):
                    # the handler makes what the raising rank skipped (fairseq's dummy batch after an
                    # out-of-memory error: every rank still joins DDP's all_reduce): nothing is left unpaired
                    mirrored = True
                    continue
                if not _environment_error(h.type):
                    # An exception is a rank's own event (its data, its memory, its files): a collective in the
                    # handler runs on the ranks whose `try` raised, while the others are past it or in another one.
                    self.flag(traced, "except", text, detail=(str(stmt.lineno + self.unit.offset),))
            swallowing = next((h for h in stmt.handlers if _swallows(h)), None)
            if swallowing is not None and not mirrored:
                narrowed = self._message_raises(stmt, swallowing, per)
                if narrowed is not None:
                    skipped = narrowed
                # A rank whose own work in the body raises jumps to a handler that goes on: it skips the body's
                # collectives after that point (and the `else`), which the other ranks make.
                text = f"except {self.unit.text(swallowing.type) if swallowing.type else ''}".strip()
                where = (str(stmt.lineno + self.unit.offset), str(swallowing.lineno + self.unit.offset))
                self.flag(skipped + orelse, "swallow", text, detail=where)
            return body + handlers + orelse + self._stmts(stmt.finalbody)
        if isinstance(stmt, ast.Match):
            return self._match(stmt)
        if isinstance(stmt, (ast.Return, ast.Raise)):
            value = stmt.value if isinstance(stmt, ast.Return) else stmt.exc
            if id(stmt) in self.caught:  # its handler goes on after the `try`: the rank does not leave
                return self._expr(value)
            return self._expr(value) + [_Item("exit", status="return", node=stmt)]
        if isinstance(stmt, (ast.Continue, ast.Break)):
            return [_Item("exit", status="continue" if isinstance(stmt, ast.Continue) else "break", node=stmt)]
        if isinstance(stmt, ast.Assign):
            return self._expr(stmt.value) + [i for t in stmt.targets for i in self._expr(t)]
        return [i for c in ast.iter_child_nodes(stmt) if isinstance(c, ast.expr) for i in self._expr(c)]

    def _suppresses(self, expr: ast.expr) -> bool:
        """``contextlib.suppress(...)`` of errors that can be a rank's own (not only ``ImportError``-like ones every
        rank raises alike, nor only ``StopIteration``/``KeyboardInterrupt``)."""
        if not isinstance(expr, ast.Call) or self.an._resolve(expr.func, self.unit) != "contextlib.suppress":
            return False
        if not expr.args or any(isinstance(a, ast.Starred) for a in expr.args):
            return False
        kinds = ast.Tuple(elts=list(expr.args))
        names = {_terminal(k) for k in expr.args}
        return not _environment_error(kinds) and not names <= _NOT_OWN_ERRORS

    def _caught_calls(self, stmt: ast.Try) -> set[int]:
        """The calls in a ``try``'s body of the file's functions that can raise (:attr:`_Analysis.raisers`) when a
        handler of the ``try`` catches every error and goes on to the statement after it (``except Exception:``
        that logs, with no ``return``, ``raise``, ``break`` or ``continue``): the rank does not leave there (round
        42's correct sglang item: ``create_shm`` raises ``OSError`` inside ``try: ... except Exception as e:
        print(...)``, and every rank goes on to the ``barrier`` after the ``try``). ``except Exception`` does not
        catch ``sys.exit()``: a function that can exit the process is still a leave there."""
        catch_all = None
        for handler in stmt.handlers:
            if any(isinstance(n, (ast.Return, ast.Raise, ast.Break, ast.Continue)) for n in _own_nodes(handler.body)):
                continue
            if _always_raises(handler.body) or any(
                isinstance(n, ast.Call) and _dotted(n.func) in _EXIT_CALLS for n in _own_nodes(handler.body)
            ):
                continue
            kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
            names = {_terminal(k) for k in kinds if k is not None}
            if handler.type is None or "BaseException" in names:
                catch_all = "base"
                break
            if "Exception" in names:
                catch_all = "exception"
        if catch_all is None:
            return set()
        caught = set()
        for node in _own_nodes(stmt.body):
            if not isinstance(node, ast.Call):
                continue
            found = self.an.classify(node, self.unit, self.self_class, self.scope)
            if found is None or found.kind != "call" or found.target not in self.an.raisers:
                continue
            if catch_all == "base" or not self.an.exits_process(found.target):
                caught.add(id(node))
        return caught

    def _message_raises(self, stmt: ast.Try, handler: ast.ExceptHandler, per: list[list[_Item]]) -> list[_Item] | None:
        """For a handler that goes on only after errors whose message holds a given text and re-raises the rest
        (``if "no samples" not in str(error): raise``), when every ``raise`` of the file with that text in its
        message is in the ``try`` body or in a function of the file that a statement of the body calls, after all
        of that function's collectives: the collectives a rank can skip by that error, those of the body's
        statements after the one that raises. DeepForest's metric (round 41) raises its "no samples" error from
        ``compute()`` only after both all-gathers, from values every rank gathered alike. None when the handler
        is not of that shape or a matching ``raise`` is elsewhere (a library's error, or deeper in the file)."""
        texts = _filtered_messages(handler)
        if not texts:
            return None
        raises = [
            (func, node)
            for func in self.an.funcs
            for node in _own_nodes(func.node.body)
            if isinstance(node, ast.Raise) and any(t in m for m in _raise_messages(node) for t in texts)
        ]
        direct = [
            n
            for n in _own_nodes(stmt.body)
            if isinstance(n, ast.Raise) and any(t in m for m in _raise_messages(n) for t in texts)
        ]
        if not raises and not direct:
            return None
        starts: list[int] = []
        for index, part in enumerate(stmt.body):
            if any(n in direct for n in _own_nodes([part])):
                starts.append(index)
        for func, node in raises:
            if node in direct:
                continue
            body = func.node.body
            top = next((i for i, part in enumerate(body) if any(n is node for n in _own_nodes([part]))), None)
            if top is None or any(self._reaches_collective(part, func) for part in body[top:]):
                return None
            callers = [
                index
                for index, part in enumerate(stmt.body)
                if any(
                    isinstance(n, ast.Call)
                    and (found := self.an.classify(n, self.unit, self.self_class, self.scope)) is not None
                    and found.kind == "call"
                    and found.target == func.key
                    for n in _own_nodes([part])
                )
            ]
            if not callers:
                return None
            starts.append(min(callers) + 1)
        first = min(starts)
        return [item for items in per[first:] for item in items]

    def _reaches_collective(self, stmt: ast.stmt, func: _Func) -> bool:
        """Whether ``stmt`` of ``func`` makes a collective or calls a function of the file that reaches one."""
        for node in _own_nodes([stmt]):
            if not isinstance(node, ast.Call):
                continue
            if _terminal(node.func) in COLLECTIVES:
                return True
            found = self.an.classify(node, func.unit, func.self_class, func.key)
            if found is not None and (found.kind == "coll" or (found.kind == "call" and found.target in self.an.reach)):
                return True
        return False

    def _works_before_collective(self, call: ast.Call) -> bool:
        """Whether a function of the file that ``call`` reaches does work of its own (:func:`_does_work`) before
        its first statement that makes or reaches a collective; True when the function is not found."""
        found = self.an.classify(call, self.unit, self.self_class, self.scope)
        func = self.an.table.get(found.target) if found is not None and found.kind == "call" else None
        if func is None:
            return True
        for stmt in func.node.body:
            for node in _own_nodes([stmt]):
                if not isinstance(node, ast.Call):
                    continue
                if _terminal(node.func) in COLLECTIVES:
                    return False
                inner = self.an.classify(node, self.unit, self.self_class, self.scope)
                if inner is not None and inner.kind == "call" and inner.target in self.an.reach:
                    return False
            if _does_work(stmt):
                return True
        return False

    def _spelled_assert(self, stmt: ast.If) -> bool:
        """A sanity check written out (:func:`_assert_written_out`) whose check is the same on every rank."""
        return _assert_written_out(stmt) and not self.an.mentions_rank(stmt.test, self.taint, self.laundered)

    def _file_lock(self, expr: ast.expr) -> str | None:
        """The text of a ``with`` item that takes a cross-process file lock, every rank the same one: a
        ``FileLock(path)``, a name this function assigned one, or a call of a context manager of the file whose
        body takes one (``fcntl.flock`` too); None otherwise, or when the lock's path depends on the rank."""
        if self.an.mentions_rank(expr, self.taint, self.laundered):
            return None
        if isinstance(expr, ast.Call) and _terminal(expr.func) in _FILE_LOCKS:
            return self.unit.text(expr)
        if isinstance(expr, ast.Name) and self.scope in self.an.table:
            for node in ast.walk(self.an.table[self.scope].node):
                if (
                    isinstance(node, ast.Assign)
                    and any(isinstance(t, ast.Name) and t.id == expr.id for t in node.targets)
                    and isinstance(node.value, ast.Call)
                    and _terminal(node.value.func) in _FILE_LOCKS
                    and not self.an.mentions_rank(node.value, self.taint, self.laundered)
                ):
                    return f"{expr.id} = {self.unit.text(node.value)}"
            return None
        if isinstance(expr, ast.Call):
            found = self.an.classify(expr, self.unit, self.self_class, self.scope)
            func = self.an.table.get(found.target) if found is not None and found.kind == "call" else None
            if func is not None and _takes_file_lock(func.node):
                return self.unit.text(expr)
        return None

    def _generator(self, bound: ast.expr) -> bool:
        """Whether a loop iterates a call of a generator function of the file that reaches a collective (a
        batch generator that broadcasts or all-reduces each batch, as Megatron-LM's ``get_batch`` broadcasts
        its data in the tensor-parallel group)."""
        bound = _unwrap_iter(bound)
        if not isinstance(bound, ast.Call):
            return False
        found = self.an.classify(bound, self.unit, self.self_class, self.scope)
        func = self.an.table.get(found.target) if found is not None and found.kind == "call" else None
        return (
            func is not None
            and func.key in self.an.reach
            and any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in _own_nodes(func.node.body))
        )

    def _handler_rank(self, stmt: ast.Try, handler: ast.ExceptHandler) -> bool | None:
        """Whether leaving from ``handler`` happens on some ranks only (True; None: not rank-dependent). In a loop,
        an exception comes from the item in hand (a rank's own batch), so a handler that skips the rest of the
        iteration is rank-dependent - except ``StopIteration`` from ``next(it)``: that is the end of the
        iterator, as rank-dependent as the iterator itself (``while True: try: x = next(it) except
        StopIteration: break`` is a ``for`` loop written out). Outside a loop a handler's exit stays quiet (see
        good_oom_skip_flag_all_reduced.py: ``except FileNotFoundError: return None``) unless the ``try`` works
        on something of the rank's own (a path or a value made from its rank: Megatron-LM's per-rank checkpoint
        shard, whose failed load exits that rank alone, corpus34)."""
        if not _skips(handler.body):
            return None
        kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        names = {_terminal(k) for k in kinds if k is not None}
        if names and names <= {"StopIteration", "StopAsyncIteration"}:
            nexts = [
                n.args[0]
                for n in _own_nodes(stmt.body)
                if isinstance(n, ast.Call) and _terminal(n.func) in ("next", "anext") and n.args
            ]
            if nexts and not any(self.an.mentions_rank(a, self.taint, self.laundered) for a in nexts):
                return None
            return True if self.loops else None
        return True if self.loops or self._tries_ranks_own(stmt) else None

    def _tries_ranks_own(self, stmt: ast.Try) -> bool:
        """Whether a ``try`` body's expressions mention the rank (directly or through names made from it)."""
        return any(
            self.an.mentions_rank(child, self.taint, self.laundered)
            for inner in stmt.body
            for child in ast.iter_child_nodes(inner)
            if isinstance(child, ast.expr)
        )

    def _raises_by_rank(self, call: ast.Call, target: str) -> str | None:
        """Whether a call of a function of the file raises on some ranks only: its raise sits under a test on the
        rank, or under a test on a parameter that this call hands a rank-dependent value (fairseq's
        ``all_gather_list`` raising when one rank's payload outgrows ``max_size``). Returns the test."""
        if target in self.an.rank_raisers:
            return self.an.rank_raisers[target][0]
        gated = self.an.param_raisers.get(target)
        if gated is None:
            return None
        params, cond = gated
        func = self.an.table[target]
        names = [a.arg for a in func.node.args.args]
        skip = 1 if names[:1] in (["self"], ["cls"]) else 0
        bound = list(zip(names[skip:], call.args)) + [(k.arg, k.value) for k in call.keywords if k.arg]
        for param, arg in bound:
            if param in params and self.an.mentions_rank(arg, self.taint, self.laundered):
                return f"{cond}, on {self.unit.text(arg)}, which differs between ranks"
        return None

    def _first_raise(self, stmt: ast.With | ast.AsyncWith) -> None:
        """Accelerate's ``with main_process_first():`` whose body raises on some ranks only: the main process
        makes the closing barrier only if its body returns normally (``_goes_first`` has no ``try/finally``
        around its ``yield``, so an exception skips the code after it), and the other ranks, waiting in the
        opening barrier, wait until the timeout. A ``return`` in the body is fine: the context manager still runs
        its closing barrier. barrierlab's own ``main_process_first`` tells the other ranks that the main process
        failed, and transformers' ``TrainingArguments.main_process_first`` makes its closing barrier in a
        ``finally``: neither is reported (review16b)."""
        calls = [i.context_expr for i in stmt.items if isinstance(i.context_expr, ast.Call)]
        wrapper = next(
            (c for c in calls if (self.an._collective(c.func, self.unit) or "") == "wrapper.main_process_first"), None
        )
        if wrapper is None or not _accelerate_receiver(wrapper.func, self.unit.aliases):
            return
        found = _ranked_raise(
            stmt.body,
            lambda test: self.an.mentions_rank(test, self.taint, self.laundered),
            lambda call: self.an._callee(call.func, self.self_class, self.unit) in self.an.raisers,
        )
        if found is None:
            for call in (n for n in _own_nodes(stmt.body) if isinstance(n, ast.Call)):
                target = self.an._callee(call.func, self.self_class, self.unit)
                if target in self.an.rank_raisers:
                    cond, raised = self.an.rank_raisers[target]
                    found = (f"{cond} in {_dotted(call.func)}()", raised)
                    break
        if found is None:
            return
        cond, raised = found
        if _NOT_MAIN.search(cond):  # only the other ranks raise: they passed their opening barrier already, and
            return  # only the main process makes the closing one (review20b: no rank waits then)
        site = _Site(wrapper, f"{_dotted(wrapper.func) or 'main_process_first'} (its closing barrier)", None)
        exit_item = _Item("exit", status="return", node=raised)
        self.an.flag(self.unit, site, "first-raise", cond, _Leave(cond, exit_item, frozenset({"return"})))
        # the other ranks wait in the block's opening barrier: they reach no collective after it either, so the
        # raise is not also an early exit before those (review51b)
        self.first_raised.add(id(raised))

    def _note_fed(self, stmts: list[ast.stmt], loop: _Item) -> None:
        """Remember the metrics whose list states torchmetrics gathers element by element that a rank-dependent
        loop updates: their later ``compute()``/``sync()`` makes a different number of all_gathers per rank."""
        if not loop.rank:
            return
        for node in _own_nodes(stmts):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            target = func.value if isinstance(func, ast.Attribute) and func.attr in _METRIC_FEEDS else func
            name = _dotted(target)
            if name is None or name in self.fed:
                continue
            states = self.an.per_element_states(self.an._constructed(name, self.scope, self.self_class))
            if states is not None:
                self.fed[name] = (loop.text, str(node.lineno + self.unit.offset), states)

    def _match(self, stmt: ast.Match) -> list[_Item]:
        subject = self.unit.text(stmt.subject)
        rank = self.an.mentions_rank(stmt.subject, self.taint, self.laundered)
        orelse: list[_Item] = []
        for case in reversed(stmt.cases):
            if isinstance(case.pattern, ast.MatchAs) and case.pattern.pattern is None and case.guard is None:
                orelse = self.block(case.body, None)  # ``case _:``/``case other:`` matches what is left: the else
                continue
            text = f"{subject} matches {ast.unparse(case.pattern)}"
            if case.guard is not None:
                text += f" if {self.unit.text(case.guard)}"
            orelse = [self._if(None, self.block(case.body, None), orelse, text=text, rank=rank)]
        return self._expr(stmt.subject) + orelse

    # -- expressions

    def _expr(self, node: ast.AST | None) -> list[_Item]:
        if node is None or isinstance(node, ast.Lambda):
            return []
        if isinstance(node, ast.IfExp):
            items = self._expr(node.test)
            body, orelse = self._expr(node.body), self._expr(node.orelse)
            return items + ([self._if(node.test, body, orelse)] if body or orelse else [])
        if isinstance(node, ast.BoolOp):
            return self._boolop(node.op, node.values)
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            gens = node.generators
            items = self._expr(gens[0].iter) + self._dunders(gens[0])
            body = [i for g in gens[1:] for i in self._expr(g.iter)]
            body += [i for g in gens for c in g.ifs for i in self._expr(c)]
            elts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
            made = [i for e in elts for i in self._expr(e)]
            for cond in reversed([c for g in gens for c in g.ifs]):  # the element is made only where the ifs hold
                made = [self._if(cond, made, [])] if made else []
            body += made
            return items + ([self._loop(gens[0].iter, body, [], extra=[g.iter for g in gens[1:]])] if body else [])
        if isinstance(node, ast.Call):
            items = [i for c in (node.func, *node.args, *(k.value for k in node.keywords)) for i in self._expr(c)]
            items += self._dunders(node)
            op = self._op(node)
            items += [op] if op else []
            found = self.an.classify(node, self.unit, self.self_class, self.scope)
            line = self.an.raisers.get(found.target) if found is not None and found.kind == "call" else None
            if id(node) in self.caught:  # a handler of its `try` catches whatever it raises and goes on
                line = None
            if line is not None:
                leave = _Item("exit", status="return", node=node)
                ranked = self._raises_by_rank(node, found.target)
                if ranked is None:
                    items.append(self._if(None, [leave], [], text=f"{found.display}() raises ({line})"))
                else:  # it raises before its collective on the ranks whose argument makes it
                    text = f"{found.display}() raises ({line}) when {ranked}"
                    items.insert(len(items) - (1 if op else 0), self._if(None, [leave], [], text=text, rank=True))
            return items
        if isinstance(node, ast.FormattedValue):
            return self._expr(node.value) + self._dunders(node) + self._expr(node.format_spec)
        if isinstance(node, ast.Attribute):
            getter = self.an.property_call(node, self.unit, self.self_class, self.scope)
            if getter is not None:  # `data.steps_per_epoch`: a property whose getter reaches a collective
                op = self._op(getter)
                return self._expr(node.value) + ([op] if op else [])
        return [i for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr) for i in self._expr(c)]

    def _dunders(self, node: ast.AST) -> list[_Item]:
        """The items of the methods ``node`` runs implicitly (:meth:`_Analysis.dunder_calls`)."""
        ops = (self._op(c) for c in self.an.dunder_calls(node, self.unit, self.self_class, self.scope))
        return [op for op in ops if op is not None]

    def _boolop(self, op: ast.boolop, values: list[ast.expr]) -> list[_Item]:
        items = self._expr(values[0])
        rest = self._boolop(op, values[1:]) if len(values) > 1 else []
        if rest:
            body, orelse = (rest, []) if isinstance(op, ast.And) else ([], rest)
            # `bad or any_rank(bad)`: the collective on the right runs only on the ranks whose own data left
            # the left operand false (true for `and`): each rank decides from its own batch.
            local = self._local_test(values[0])
            if local is not None:
                items.append(self._if(None, body, orelse, text=local, rank=True))
            else:
                items.append(self._if(values[0], body, orelse))
        return items

    def _op(self, call: ast.Call) -> _Item | None:
        if _dotted(call.func) in _EXIT_CALLS or _ends_the_group(call):
            return _Item("exit", status="return", node=call)
        found = self.an.classify(call, self.unit, self.self_class, self.scope)
        if found is None:
            return None
        if found.kind == "coll":
            site = _Site(call, found.display, None, found.note, found.advice)
            fed = _terminal(call.func) in _METRIC_SYNCS and isinstance(call.func, ast.Attribute)
            if fed and _dotted(call.func.value) in self.fed:
                metric = _dotted(call.func.value) or ""
                loop, line, states = self.fed[metric]
                self.an.flag(self.unit, site, "uneven-state", loop, None, (states, line, metric))
            return _Item("op", key=("op", found.target), site=site, node=call)
        if (
            found.target not in self.an.reach
            or self.an.switched_off(call, found.target)
            or self.an.turned_off_by_constants(call, found.target)
        ):
            return None
        note = found.note or self.an.reach_notes.get(found.target, "")
        runs = (found.target,) if id(call) in self.an._implicit else ()  # the method `len(x)` runs: x.__len__
        site = _Site(call, " -> ".join((found.display, *runs, *self.an.chain(found.target))), found.display, note)
        item = _Item("op", key=("call", found.target), site=site, node=call)
        return (
            self._fed_own_data(call, found, item)
            or self._fed_rank_share(call, found, item)
            or self._looped_uneven_share(call, found, item)
            or item
        )

    def _fed_own_data(self, call: ast.Call, found: _Call, item: _Item) -> _Item | None:
        """A call of a function of the file that makes a collective only under a test on a parameter (see
        :meth:`_Analysis.data_gate`), handed there a value of this rank's own batch or model output (see
        :meth:`_local_values`): each rank's data decides whether the callee makes it (a ZeRO-3 model's vision
        tower run only ``if pixel_values is not None``, round 25). The call is reported under that test."""
        if not self.local:
            return None
        gate = self.an.data_gate(found.target)
        if gate is None:
            return None
        params, test, inner, shown = gate
        func = self.an.table[found.target]
        names = [a.arg for a in func.node.args.args]
        skip = 1 if names[:1] in (["self"], ["cls"]) else 0
        if isinstance(call.func, (ast.Name, ast.Attribute)) and found.target.endswith((".__call__", ".forward")):
            skip = 1 if names[:1] == ["self"] else 0
        bound = list(zip(names[skip:], call.args)) + [(k.arg, k.value) for k in call.keywords if k.arg]
        for param, arg in bound:
            source = self._local_source(arg, self.local) if param in params else None
            if source is None or self.an.mentions_rank(arg, self.taint, self.laundered):
                continue
            text = test
            self.an.local_notes.setdefault(
                text, f"`{self.unit.text(arg)[:40]}`, handed to `{func.node.name}()` by this call, from {source}"
            )
            chain = " -> ".join((found.display, shown, *(self.an.chain(inner) if inner else ())))
            gated = _Item("op", key=item.key, site=_Site(call, chain, found.display, item.site.note), node=call)  # type: ignore[union-attr]
            return self._if(None, [gated], [], text=text, rank=True)
        return None

    def _fed_rank_share(self, call: ast.Call, found: _Call, item: _Item) -> _Item | None:
        """A call of a function of the file that makes a collective only under a test on a parameter (see
        :meth:`_Analysis.data_gate`), handed there this rank's own share of the data: a value that differs
        between ranks (``shard(batch, rank, world)``) and whose length lint cannot show to be the same on every
        rank. The callee's test (``if not mbs: return`` over the share's minibatches) then comes out differently
        on different ranks, although no name in the callee says rank: RLlib's Learner that skipped its DDP steps
        on an empty shard (ray PR #66030, round 40). The call is reported under that test."""
        gate = self.an.data_gate(found.target)
        if gate is None:
            return None
        params, test, inner, shown = gate
        func = self.an.table[found.target]
        names = [a.arg for a in func.node.args.args]
        skip = 1 if names[:1] in (["self"], ["cls"]) and isinstance(call.func, ast.Attribute) else 0
        bound = list(zip(names[skip:], call.args)) + [(k.arg, k.value) for k in call.keywords if k.arg]
        sources = _parameter_sources(func)
        for param, arg in bound:
            if param not in params or _rank_name(param) or isinstance(arg, ast.Constant):
                continue
            if not _length_test(self.an._gate_tests[found.target], {n for n, p in sources.items() if param in p}):
                continue  # a test on the share's content may agree (a config every rank of a group shares)
            if not self.an.mentions_rank(arg, self.taint, self.laundered) or self._equal_trips(arg):
                continue
            self.an.share_notes.setdefault(
                test, (self.unit.text(arg)[:60], func.node.name, param, call.lineno + self.unit.offset)
            )
            chain = " -> ".join((found.display, shown, *(self.an.chain(inner) if inner else ())))
            gated = _Item("op", key=item.key, site=_Site(call, chain, found.display, item.site.note), node=call)  # type: ignore[union-attr]
            return self._if(None, [gated], [], text=test, rank=True)
        return None

    def _trip_counts(
        self,
        loop: ast.For,
        scope: str | None,
        bound: list[tuple[str, ast.expr]],
        built: tuple[ast.Call, str | None, str, str] | None = None,
    ) -> tuple[int, list[int]] | None:
        """(world size, trips per rank) of ``loop`` in ``scope`` when :class:`_ShareCounter` can count them on
        every rank and they differ, for the world size the file states (else for 2, 4 or 8 ranks); ``bound``
        gives the loop's function's parameters, as this scope's expressions; ``built`` (a construction call of the
        loop's class, the scope it is in, the class, the method's ``self``) binds ``self`` to the object that call
        builds. A count that fails on one rank stops
        the search (what lint cannot evaluate does not depend on the world size), and the whole file's counting
        stops after :data:`_FILE_COUNT_BUDGET` steps. None otherwise."""
        for world in (self.an.world_size,) if self.an.world_size else _USUAL_WORLDS:
            counts = []
            for rank in range(world):
                if self.an._count_spent > _FILE_COUNT_BUDGET:
                    return None
                counter = _ShareCounter(self.an, self.unit, rank, world)
                env: dict[str, Any] = {}
                if built is not None:
                    call, where, cls, me = built
                    try:
                        env[me] = counter._build(cls, call, where, {}, 0)
                    except _NoCount:
                        self.an._count_spent += counter.steps
                        return None
                for param, arg in bound:
                    try:
                        env[param] = counter.value(arg, self.scope, {}, 0)
                    except _NoCount:
                        env[param] = _NoCount
                try:
                    counts.append(counter.trips(loop, scope, env))
                except _NoCount:
                    return None
                finally:
                    self.an._count_spent += counter.steps
            if len(set(counts)) > 1:
                return world, counts
        return None

    def _counted_uneven(self, stmt: ast.For | ast.AsyncFor, loop: _Item) -> None:
        """A loop over a rank-dependent value that lint's length rules let pass (a length they cannot see), when
        :class:`_ShareCounter` counts its trips on every rank and they differ: its collectives are reported like
        those of any rank-dependent loop. Only loops without exits but their leading caps (see
        :func:`_loop_caps`), so that no agreed ``break`` evens them out (allennlp's all-reduced ``done`` flag).
        AllenNLP's ``read_instances()[rank::world]`` of 11 instances is 6 and 5 on 2 ranks."""
        if loop.rank or not isinstance(stmt, ast.For) or stmt.orelse:
            return
        caps = _loop_caps(stmt)
        if any(
            isinstance(n, (ast.Break, ast.Continue, ast.Return, ast.Raise)) for n in _own_nodes(stmt.body[len(caps) :])
        ):
            return
        if not any(i.site for i in _walk_items(loop.body)):
            return
        counted, where = None, ""
        if self.an.mentions_rank(stmt.iter, self.taint, self.laundered):
            counted = self._trip_counts(stmt, self.scope, [])
        else:
            for built in self._built_here(stmt):
                counted = self._trip_counts(stmt, self.scope, [], built)
                if counted is not None:
                    where = f"; self built at line {built[0].lineno + self.unit.offset}"
                    break
        if counted is None:
            return
        world, counts = counted
        loop.rank = loop.dynamic = True
        shown = ", ".join(f"rank {r}: {n}" for r, n in enumerate(counts))
        loop.text = f"{loop.text} (on {world} ranks its trips are {shown}{where})"
        self.flag(loop.body, "loop", loop.text)

    def _built_here(self, stmt: ast.For) -> list[tuple[ast.Call, str | None, str, str]]:
        """For a loop of a method that reads ``self``: the calls of the file that build an object of the method's
        class (or of a subclass), each with its scope, the class built and the method's ``self`` parameter (at
        most 4). Object state (a loader the constructor stored) decides the loop's length: composer's Trainer
        handed ``ShardDataLoader(rank)`` (round 34)."""
        func = self.an.table.get(self.scope) if self.scope is not None else None
        if func is None or self.self_class is None or not func.node.args.args:
            return []
        me = func.node.args.args[0].arg
        if not any(isinstance(n, ast.Name) and n.id == me for n in ast.walk(stmt.iter)):
            return []
        sites: list[tuple[ast.Call, str | None, str, str]] = []
        scopes = [(f.key, f.unit, list(_own_nodes(f.node.body))) for f in self.an.funcs]
        scopes += [(None, u, list(_own_nodes(u.tree.body))) for u in self.an.units if u.report]
        for key, unit, nodes in scopes:
            for node in nodes:
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                    continue
                callee = self.an._callee(node.func, None, unit)
                init = self.an.table.get(callee) if callee is not None and callee.endswith(".__init__") else None
                if init is not None and init.self_class and self.self_class in self.an._ancestors(init.self_class):
                    sites.append((node, key, init.self_class, me))
                    if len(sites) >= 4:
                        return sites
        return sites

    def _looped_uneven_share(self, call: ast.Call, found: _Call, item: _Item) -> _Item | None:
        """A call of a function of the file that loops over a parameter and reaches a collective on every trip
        (see :meth:`_Analysis.loop_gate`), handed there this rank's own share of the data, when lint can count
        the loop's trips on each rank (:class:`_ShareCounter`: the share built by rank-dependent slicing or
        filtering of data of a length lint can see, then batched) and the counts differ for the world size the
        file states (else for 2, 4 or 8 ranks): ranks make different numbers of the callee's collectives. A share
        whose length lint cannot count (read from a file, a parameter of the caller) stays quiet, and so does one
        padded or cut to the same length on every rank. litdata's chunks dealt ``index % world_size == rank`` (6,
        3, 5 and 4 items: 11 and 7, so 5 and 3 batches of 2) to a DDP training loop (round 41)."""
        gate = self.an.loop_gate(found.target)
        if gate is None:
            return None
        loop, inner, shown = gate
        func = self.an.table[found.target]
        args = func.node.args
        if args.vararg or args.kwarg or any(isinstance(a, ast.Starred) for a in call.args):
            return None
        names = [a.arg for a in (*args.posonlyargs, *args.args)]
        skip = 1 if names[:1] in (["self"], ["cls"]) and isinstance(call.func, ast.Attribute) else 0
        bound = list(zip(names[skip:], call.args)) + [(k.arg, k.value) for k in call.keywords if k.arg]
        if not any(self.an.mentions_rank(arg, self.taint, self.laundered) for _, arg in bound):
            return None
        counted = self._trip_counts(loop, func.key, bound)
        if counted is None:
            return None
        world, counts = counted
        shown_counts = ", ".join(f"rank {r}: {n}" for r, n in enumerate(counts))
        sources = _parameter_sources(func)
        read = {q for n in ast.walk(loop.iter) if isinstance(n, ast.Name) for q in sources.get(n.id, ())}
        handed = (
            ", ".join(
                _clip(self.unit.text(a), 60)
                for p, a in bound
                if p in read and not _rank_name(p) and self.an.mentions_rank(a, self.taint, self.laundered)
            )
            or "its arguments"
        )
        text = (
            f"{func.unit.text(loop.iter)} (in {func.node.name}(), given {handed} by this call: on {world} ranks its "
            f"trips are {shown_counts})"
        )
        chain = " -> ".join((found.display, shown, *(self.an.chain(inner) if inner else ())))
        looped = _Item("op", key=item.key, site=_Site(call, chain, found.display, item.site.note), node=call)  # type: ignore[union-attr]
        self.flag([looped], "loop", text)
        return _Item("loop", text=text, rank=True, body=[looped], orelse=[], dynamic=True)

    # -- control flow

    def _if(
        self,
        test: ast.expr | None,
        body: list[_Item],
        orelse: list[_Item],
        text: str | None = None,
        rank: bool | None = None,
    ) -> _Item:
        if rank is None:
            rank = test is not None and self.an.mentions_rank(test, self.taint, self.laundered)
            if rank and not self.loops and self.scope is not None:  # only what was assigned before the test
                rank = self.an.rank_before(self.scope, test, self.laundered)  # type: ignore[arg-type]
        text = text if text is not None else self.unit.text(test)  # type: ignore[arg-type]
        dynamic = rank or any(i.dynamic or i.kind == "exit" for i in (*body, *orelse))
        item = _Item("if", test=test, text=text, rank=rank, body=body, orelse=orelse, dynamic=dynamic)
        if not rank:
            return item
        # an if and its else making the same collectives on different groups in opposite orders look balanced
        # when the groups are left out: the order check comes first
        if self._swapped_order(body, orelse, text):
            return item
        if self._balanced([item], None):
            self.an.retract([item])
            return item
        negated = self._negate(test, text)
        matcher = difflib.SequenceMatcher(
            None, list(map(self._made, body)), list(map(self._made, orelse)), autojunk=False
        )
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag != "equal":
                self.flag(body[i1:i2], "branch", text, within=(test, True))
                self.flag(orelse[j1:j2], "branch", negated, within=(test, False))
        return item

    def _made(self, item: _Item) -> tuple:
        """What ``item`` makes, to match an if's branches by: a call of a function of the file that always makes
        one collective counts as that collective (see :meth:`_Analysis.fixed_collectives`)."""
        if item.kind == "op" and item.key[0] == "call":
            fixed = self.an.fixed_collectives(item.key[1])
            if fixed is not None and len(fixed) == 1:
                return fixed[0]
        return _key(item)

    def _swapped_order(self, body: list[_Item], orelse: list[_Item], text: str) -> bool:
        """Two rank branches (an ``if`` and its ``else`` or ``elif``) that make the same collectives on the same
        groups in another order (review65b M6: rank 0 enters g1's barrier then g2's, rank 1 g2's then g1's): one
        finding, at the first call, naming both orders; the branches' own findings, each saying "the others never
        call it" of a call the other branch makes, are withdrawn."""
        other, other_text = orelse, None
        if len(orelse) == 1 and orelse[0].kind == "if" and orelse[0].rank:
            other, other_text = orelse[0].body, orelse[0].text
        if not other or len(body) < 2 or any(i.kind != "op" for i in (*body, *other)):
            return False

        def keyed(item: _Item) -> tuple:
            group = next((k.value for k in item.node.keywords if k.arg == "group"), None)  # type: ignore[union-attr]
            return (*_key(item), self.unit.text(group) if group is not None else "")

        mine, theirs = [keyed(i) for i in body], [keyed(i) for i in other]
        if sorted(mine) != sorted(theirs) or mine == theirs or len(set(mine)) < 2:
            return False
        self.an.retract([*body, *other])
        first = body[0]
        where = next(o for o in other if keyed(o) == mine[0])
        line = where.node.lineno + self.unit.offset  # type: ignore[union-attr]
        # the same calls in the same order but on other groups: each group pairs its own calls, and the branches
        # wait in different groups for each other (lintfix28 C, run on gloo: every rank stuck in its first call)
        groups = ("", "")
        if [i[:-1] for i in mine] == [i[:-1] for i in theirs] and mine[0][-1] and theirs[0][-1]:
            groups = (mine[0][-1], theirs[0][-1])
        self.an.flag(self.unit, first.site, "order", text, None, (other_text or "", str(line), *groups))
        return True

    def _loop(
        self,
        bound: ast.expr,
        body: list[_Item],
        orelse: list[_Item],
        extra: Sequence[ast.expr] = (),
        local: str | None = None,
    ) -> _Item:
        text = local or self.unit.text(bound)
        bound = self._zip_cap(bound) or bound
        rank = local is not None or any(
            self.an.mentions_rank(e, self.taint, self.laundered) and not self._equal_trips(e) for e in (bound, *extra)
        )
        uneven = self._uneven_loader(bound) if not rank else None
        if uneven is not None:
            rank, text = True, f"{text} ({uneven})"
        built = self.an._constructed(_dotted(_unwrap_iter(bound)), self.scope, self.self_class)
        even = self.an.share_evenness(built) if built is not None else None
        if even is False and not rank:
            rank = True
            text = (
                f"{text} (its {built.local} deals each rank every world-size-th item of a list that is neither padded "  # type: ignore[union-attr]
                "nor cut to a multiple of the world size, so ranks get different numbers of items)"
            )
        sized_by = self._rank_len(bound)
        if sized_by is not None and not rank:
            seeded = self.an.rng_seeder
            why = f"; random draws seeded per rank by `{seeded}` reach it" if seeded else ""
            rank, text = True, f"{text} (its {sized_by}.__len__ differs between ranks{why})"
        dynamic = any(i.dynamic for i in (*body, *orelse))
        item = _Item("loop", text=text, rank=rank, body=body, orelse=orelse, dynamic=dynamic)
        if rank:
            self.flag([*body, *orelse], "loop", text)
        elif local is None and self._set_order(bound, 0):
            self.flag([*body, *orelse], "set-order", text)
        return item

    def _zip_cap(self, bound: ast.expr) -> ast.expr | None:
        """``zip(range(steps), loader)`` (under ``enumerate``): a ``zip`` stops at its shortest argument, and
        a ``range`` of a value every rank shares caps it — the recipe that runs every rank for the minimum
        number of steps over the ranks (each rank's own loader being at least that long). That ``range``, or
        None."""
        bound = _unwrap_iter(bound)
        if not (isinstance(bound, ast.Call) and _terminal(bound.func) == "zip"):
            return None
        for arg in bound.args:
            if (
                isinstance(arg, ast.Call)
                and _terminal(arg.func) == "range"
                and not self.an.mentions_rank(arg, self.taint, self.laundered)
                and self._local_source(arg, self.local) is None
            ):
                return arg
        return None

    def _set_order(self, bound: ast.expr, depth: int) -> bool:
        """Whether the loop goes through a set that may hold strings, in the set's own order: ``set(...)``,
        ``frozenset(...)``, a set literal or comprehension, ``a - b``/``a | b``/``a & b``/``a ^ b`` of one, or a
        name assigned once from one (``list(s)``/``tuple(s)``/``enumerate(s)`` keep that order; ``sorted(s)``
        does not). A set of ints (``set(range(n))``, int literals) iterates alike in every process."""
        while isinstance(bound, ast.Call) and _terminal(bound.func) in ("enumerate", "tqdm", "iter", "list", "tuple"):
            if not bound.args:
                return False
            bound = bound.args[0]
        if isinstance(bound, ast.Name) and depth < 3:
            for key in (self.scope, None):
                value = self.an.values.get(key, {}).get(bound.id)
                if value is not None:
                    return self._set_order(value, depth + 1)
            return False
        if isinstance(bound, ast.BinOp) and isinstance(bound.op, (ast.Sub, ast.BitOr, ast.BitAnd, ast.BitXor)):
            return self._set_order(bound.left, depth) or (
                isinstance(bound.op, (ast.BitOr, ast.BitXor)) and self._set_order(bound.right, depth)
            )
        if isinstance(bound, ast.Set):
            return not all(isinstance(e, ast.Constant) and isinstance(e.value, int) for e in bound.elts)
        if isinstance(bound, ast.SetComp):
            return not (
                len(bound.generators) == 1
                and isinstance(bound.generators[0].iter, ast.Call)
                and _terminal(bound.generators[0].iter.func) == "range"
            )
        if isinstance(bound, ast.Call) and isinstance(bound.func, ast.Name) and bound.func.id in ("set", "frozenset"):
            if not bound.args:
                return False
            inner = bound.args[0]
            return not (isinstance(inner, ast.Call) and _terminal(inner.func) == "range")
        return False

    def _uneven_loader(self, bound: ast.expr) -> str | None:
        """Why a loop over a data loader prepared by an Accelerator built with ``even_batches=False`` (directly or
        through ``DataLoaderConfiguration``) runs a different number of times on different processes: accelerate
        then gives each process its own number of batches ("each process will see a different number of
        batches", PR #781) instead of padding the last one. The loader may come in through a parameter: the
        callers of the file are followed (three levels)."""
        line = self.an.uneven_batches
        if line is None:
            return None
        while isinstance(bound, ast.Call) and _terminal(bound.func) in ("enumerate", "tqdm", "iter") and bound.args:
            bound = bound.args[0]
        if not isinstance(bound, ast.Name) or not self._prepared(bound.id, self.scope, 0):
            return None
        return (
            f"a data loader prepared with even_batches=False (line {line}): each process gets its own number of batches"
        )

    def _prepared(self, name: str, scope: str | None, depth: int) -> bool:
        """Whether ``name`` in ``scope`` holds what an Accelerator's ``prepare(...)`` returned."""
        func = self.an.table.get(scope) if scope is not None else None
        nodes = (
            list(_own_nodes(func.node.body))
            if func is not None
            else [n for u in self.an.units for n in _own_nodes(u.tree.body)]
        )
        for names, value, _ in _assignments(nodes):
            if (
                name in names
                and isinstance(value, ast.Call)
                and _terminal(value.func) in ("prepare", "prepare_data_loader")
            ):
                return True
        if func is None or depth >= 3:
            return False
        params = [a.arg for a in func.node.args.args]
        if name not in params or any(name in n for n, _, _ in _assignments(nodes)):
            return False
        skip = 1 if params[:1] in (["self"], ["cls"]) else 0
        index = params.index(name) - skip
        for caller in self.an.funcs:
            for call in _own_nodes(caller.node.body):
                if not (isinstance(call, ast.Call) and _terminal(call.func) == func.node.name):
                    continue
                arg = call.args[index] if 0 <= index < len(call.args) else None
                arg = arg or next((k.value for k in call.keywords if k.arg == name), None)
                if isinstance(arg, ast.Name) and self._prepared(arg.id, caller.key, depth + 1):
                    return True
        return False

    def _rank_len(self, bound: ast.expr) -> str | None:
        """The class of the file whose ``__len__`` differs between ranks, when the loop iterates an object of it
        (a batch sampler that packs batches from a shuffle of each rank's own random state)."""
        built = self.an._constructed(_dotted(_unwrap_iter(bound)), self.scope, self.self_class)
        if built is None or built.local is None or self.an.share_evenness(built) is True:
            return None
        for cls in self.an._ancestors(built.local):
            if f"{cls}.__len__" in self.an.table:
                return cls if f"{cls}.__len__" in self.an.rank_returns else None
        return None

    def _equal_trips(self, bound: ast.expr) -> bool:
        """Whether a loop over ``bound`` runs as often on every rank although ``bound`` itself differs: its
        length is the same everywhere (``range(rank * n, rank * n + n)``, ``shards[rank::world]`` of a list
        whose length is a multiple of ``world``, batches cut from such a slice, the rows of ``torch.randn(4, 8,
        generator=g)`` drawn per rank, a list a helper builds with one ``append`` per trip of a fixed loop), or it
        never ends by itself
        (``itertools.cycle``/``count``: only its exits end it, and they are checked like any other)."""
        length = self._length(bound, 0)
        return length is not None and (length == "endless" or self._uniform(length))

    def _uniform(self, length: Any) -> bool:
        if length == "uniform":
            return True
        if isinstance(length, tuple):
            poly, atoms = length
            return not any(
                self.an.mentions_rank(atoms[a], self.taint, self.laundered) for key, c in poly.items() if c for a in key
            )
        return False

    def _value(self, name: str) -> ast.expr | None:
        for scope in (self.scope, None):
            value = self.an.values.get(scope, {}).get(name)
            if value is not None:
                return value
        return self._default(name)

    def _default(self, name: str) -> ast.expr | None:
        """The literal default of a parameter ``name`` of this function, when no call in the file passes it (an
        entry point the lab or a launcher calls with its defaults: ``scenario(num_samples=10)``)."""
        func = self.an.table.get(self.scope) if self.scope is not None else None
        if func is None or name in self.an.values.get(self.scope, {}):
            return None
        args = func.node.args
        positional = [*args.posonlyargs, *args.args]
        defaults = dict(zip([a.arg for a in positional][len(positional) - len(args.defaults) :], args.defaults))
        defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
        default = defaults.get(name)
        if default is None or _const_ints(default) is None or name in _changed_names(func.node.body):
            return None
        index = [a.arg for a in positional].index(name) if name in [a.arg for a in positional] else None
        for node in self.an.calls_named(func.node.name):
            if any(k.arg in (name, None) for k in node.keywords):
                return None
            if index is not None and (len(node.args) > index or any(isinstance(a, ast.Starred) for a in node.args)):
                return None
        return default

    def _poly(self, node: ast.AST, depth: int) -> tuple[dict[tuple[str, ...], int], dict[str, ast.AST]] | None:
        """``node`` as a polynomial (see :func:`_linear`), with names assigned once in the scope replaced by
        their values and ``len(x)`` by the length of ``x`` when it is known as a polynomial."""
        if depth > _MAX_DEPTH:
            return _linear(node)
        if isinstance(node, ast.Name) and node.id in self.bound:
            return self._bound_poly(node.id, depth)
        if isinstance(node, ast.Name):
            value = self._value(node.id)
            if value is not None:
                inner = self._poly(value, depth + 1)
                if inner is not None:
                    return inner
        if isinstance(node, ast.Subscript) and not isinstance(node.slice, ast.Slice):
            same = self._same_entries(node.value)
            if same is not None:  # ``TRAIN_ROWS[rank]`` of ``{0: 12, 1: 12}``: 12 whatever the index
                return ({(): same} if same else {}), {}
        sized = _sized_of(node)
        if sized is not None:
            length = self._length(sized, depth + 1)
            if isinstance(length, tuple):
                return length
            if length == "uniform":  # the same on every rank, value unknown: an opaque rank-free atom
                text = ast.unparse(node)
                return {(text,): 1}, {text: ast.Constant(0)}
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
            left, right = self._poly(node.left, depth + 1), self._poly(node.right, depth + 1)
            if left is None or right is None:
                return None
            out: dict[tuple[str, ...], int] = {}
            if isinstance(node.op, ast.Mult):
                for (ka, va), (kb, vb) in itertools.product(left[0].items(), right[0].items()):
                    key = tuple(sorted(ka + kb))
                    out[key] = out.get(key, 0) + va * vb
            else:
                sign = 1 if isinstance(node.op, ast.Add) else -1
                out = dict(left[0])
                for k, v in right[0].items():
                    out[k] = out.get(k, 0) + sign * v
            return {k: v for k, v in out.items() if v}, {**left[1], **right[1]}
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            inner = self._poly(node.operand, depth + 1)
            return None if inner is None else ({k: -v for k, v in inner[0].items()}, inner[1])
        if isinstance(node, ast.BinOp):  # // % / ...: an opaque atom, rank-dependent if its parts are
            text = ast.unparse(node)
            return {(text,): 1}, {text: node}
        return _linear(node)

    def _length(self, node: ast.AST, depth: int) -> Any:
        """The number of items a loop over ``node`` runs: a polynomial (see :meth:`_poly`), ``"uniform"``
        (rank-independent but not polynomial), ``"endless"``, or None (unknown)."""
        if depth > _MAX_DEPTH:
            return None
        if isinstance(node, ast.Name) and node.id in self.bound:
            return self._bound_length(node.id, depth)
        if isinstance(node, ast.Name):
            value = self._value(node.id)
            if value is None:
                flowed = self._flow_length(node.id, getattr(node, "lineno", 0), depth)
                return self._unpacked_length(node.id, depth) if flowed is _NOT_STRAIGHT else flowed
            return self._length(value, depth + 1)
        if isinstance(node, ast.BinOp) and isinstance(node.op, _ELEMENTWISE):
            # ``torch.randn(90, 6) * scale + 20.0``: arithmetic on a tensor keeps its rows
            leftmost: ast.expr = node
            while isinstance(leftmost, ast.BinOp) and isinstance(leftmost.op, _ELEMENTWISE):
                leftmost = leftmost.left
            rows = _factory_rows(leftmost) if isinstance(leftmost, ast.Call) else None
            if rows is not None:
                return self._poly(rows, depth + 1)
        if isinstance(node, (ast.List, ast.Tuple)) and not any(isinstance(e, ast.Starred) for e in node.elts):
            return {(): len(node.elts)} if node.elts else {}, {}
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            return self._attribute_length(node.attr, depth)
        if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
            if any(g.ifs for g in node.generators):
                return None
            lengths = [self._length(g.iter, depth + 1) for g in node.generators]
            if len(lengths) == 1:
                return lengths[0]
            return "uniform" if all(x is not None and self._uniform(x) for x in lengths) else None
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
            return self._slice_length(node.value, node.slice, depth)
        if isinstance(node, ast.Subscript):
            return self._entry_length(node.value, depth)
        if _splits_between_ranks(node):
            return self._split_length(node, depth)
        if isinstance(node, ast.Call):
            rows = _factory_rows(node)  # torch.randn(4, 8, 6, generator=g): 4 rows, whatever the generator
            if rows is not None:
                return self._poly(rows, depth + 1)
            if (
                isinstance(node.func, ast.Attribute)
                and node.func.attr in _MODULE_WALKS
                and self._same_module(node.func.value)
            ):
                return "uniform"  # ``self.model.head.parameters()`` of a module built alike on every rank
            built = self._built_length(node, depth)
            if built is None:
                built = self._returned_length(node, depth)
            if built is None:
                built = self._yielded_length(node, depth)
            if built is None:
                built = self._steady_yields(node)
            if built is not None:
                return built
            if (
                isinstance(node.func, ast.Attribute)
                and node.func.attr in ("split", "chunk")
                and len(node.args) == 1
                and _const_ints(node.args[0])
                and not node.keywords
            ):
                # ``x.split(8)`` of a tensor with the same rows on every rank: as many pieces on every rank
                rows = self._length(node.func.value, depth + 1)
                return "uniform" if rows is not None and rows != "endless" and self._uniform(rows) else None
            callee = self.an._callee(node.func, self.self_class, self.unit)
            if callee is not None and _endless_generator(self.an.table[callee].node):
                return "endless"
        if not isinstance(node, ast.Call) or node.keywords:
            return None
        name, args = _terminal(node.func), node.args
        if name in _ENDLESS and not (name == "count" and len(args) > 2):
            return "endless"
        if name == "repeat" and len(args) == 1:
            return "endless"
        if name in ("list", "tuple", "sorted", "reversed", "enumerate", "iter") and len(args) == 1:
            return self._length(args[0], depth + 1)
        if name == "chain" and args:
            lengths = [self._length(a, depth + 1) for a in args]
            if "endless" in lengths:
                return "endless"
            return "uniform" if all(x is not None and self._uniform(x) for x in lengths) else None
        if name == "zip" and args:
            lengths = [self._length(a, depth + 1) for a in args]
            known = [x for x in lengths if x is not None and x != "endless"]
            return "uniform" if known and all(self._uniform(x) for x in known) else None
        if name != "range" or not 1 <= len(args) <= 3:
            return None
        start, stop = (args[0], args[1]) if len(args) > 1 else (ast.Constant(0), args[0])
        lo, hi = self._poly(start, depth + 1), self._poly(stop, depth + 1)
        if lo is None or hi is None:
            return None
        poly = dict(hi[0])
        for key, coeff in lo[0].items():
            poly[key] = poly.get(key, 0) - coeff
        span = ({k: v for k, v in poly.items() if v}, {**hi[1], **lo[1]})
        if len(args) < 3 or _const_ints(args[2]) == (1,):
            return span
        if self.an.mentions_rank(start, self.taint, self.laundered) and not self.an.mentions_rank(
            stop, self.taint, self.laundered
        ):  # range(rank, n, world): n items dealt round-robin, like seq[rank::world]
            decided = self._world_split(hi, args[2])
            if decided is not None:
                return decided
            if self._blocks_dealt_evenly(start, hi, args[2]):
                return "uniform"
        if self._uniform(span) and not self.an.mentions_rank(args[2], self.taint, self.laundered):
            return "uniform"
        return None

    def _constant_value(self, node: ast.expr, depth: int) -> bool:
        """Whether ``node`` is one constant number on every rank although it reads the rank (``ROWS[rank]`` of
        ``{0: 12, 1: 12}``: :meth:`_same_entries`)."""
        try:
            poly = self._poly(node, depth + 1)
        except _UncountedArgument:
            return False
        return poly is not None and set(poly[0]) <= {()}

    def _same_entries(self, container: ast.expr) -> int | None:
        """The one value of a constant list, tuple or dict of ints whose entries are all equal (``TRAIN_ROWS = {0:
        12, 1: 12}``), bound once and never changed (no item assigned, no ``update``/``append``...): indexing it
        gives that value on every rank, whatever the index (round 32's torchrec item: ``make_rows(rank,
        TRAIN_ROWS[rank])`` makes as many batches on each rank). None otherwise."""
        if not isinstance(container, ast.Name):
            return None
        value = self._value(container.id)
        entries = (
            value.values
            if isinstance(value, ast.Dict)
            else value.elts
            if isinstance(value, (ast.List, ast.Tuple))
            else None
        )
        ints = [_const_ints(e) for e in entries or []]
        if not ints or any(i is None or len(i) != 1 for i in ints) or len({i[0] for i in ints}) != 1:  # type: ignore[index]
            return None
        name = container.id
        for unit in self.an.units:
            for n in ast.walk(unit.tree):
                if (
                    isinstance(n, ast.Subscript)
                    and isinstance(n.ctx, (ast.Store, ast.Del))
                    and _dotted(n.value) == name
                ):
                    return None
                if (
                    isinstance(n, ast.Attribute)
                    and n.attr in _MUTATORS | {"update", "setdefault", "pop"}
                    and _dotted(n.value) == name
                ):
                    return None
        return ints[0][0]  # type: ignore[index]

    def _init_binding(self, self_class: str, attr: str) -> tuple[_Func, ast.expr] | None:
        """``(__init__, value)`` when class ``self_class`` (with its bases of the file) binds ``self.<attr>`` once, at
        the top level of ``__init__``, and no method changes it later (no other binding, ``+=``, ``append``, item
        or tuple target); None otherwise."""
        classes = set(self.an._ancestors(self_class))
        methods = [f for f in self.an.funcs if f.self_class in classes]

        def own(node: ast.AST) -> bool:
            return isinstance(node, ast.Attribute) and node.attr == attr and _dotted(node.value) == "self"

        binds: list[tuple[_Func, ast.stmt, ast.expr]] = []
        for func in methods:
            for node in _own_nodes(func.node.body):
                if isinstance(node, ast.Assign):
                    for target, value in _paired_targets(node):
                        if own(target):
                            binds.append((func, node, value))
                        elif any(own(n) for n in ast.walk(target)):
                            return None  # ``self.a, rest = ...``, ``self.a[i] = ...``: not followed
                elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.Delete)):
                    targets = node.targets if isinstance(node, ast.Delete) else [node.target]
                    if any(own(n) for t in targets for n in ast.walk(t)):
                        return None
                elif (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr in _MUTATORS
                    and own(node.func.value)
                ):
                    return None
        if len(binds) != 1:
            return None
        func, stmt, value = binds[0]
        if func.node.name != "__init__" or stmt not in func.node.body:
            return None
        return func, value

    def _same_module(self, receiver: ast.expr) -> bool:
        """Whether ``receiver`` (``self.model.head``) is a module built alike on every rank: each attribute of the
        chain bound once in its class's ``__init__`` (:meth:`_init_binding`), the inner ones to objects of classes
        of the file, the last one from torch's own modules with arguments that read neither that ``__init__``'s
        parameters nor the rank, and no other line of the file assigns that attribute. Its ``parameters()`` are as
        many on every rank (round 32's torchrec item: ``DistributedModelParallel(rank)`` takes the rank for its
        embedding shard, but its dense ``over_arch = nn.Sequential(nn.Linear(...), ...)`` is the same
        everywhere)."""
        chain: list[str] = []
        while isinstance(receiver, ast.Attribute):
            chain.append(receiver.attr)
            receiver = receiver.value
        if not (isinstance(receiver, ast.Name) and receiver.id == "self") or not chain or self.self_class is None:
            return False
        cls = self.self_class
        for position, attr in enumerate(reversed(chain)):
            found = self._init_binding(cls, attr)
            if found is None or not isinstance(found[1], ast.Call):
                return False
            func, value = found
            if position < len(chain) - 1:
                cls = _terminal(value.func) or ""
                if not isinstance(value.func, ast.Name) or cls not in self.an.class_nodes:
                    return False
                continue
            args = func.node.args
            params = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
            if any(isinstance(n, ast.Name) and n.id in params for n in ast.walk(value)):
                return False
            if self.an.mentions_rank(value, set(), files=False):
                return False
            for call in (n for n in ast.walk(value) if isinstance(n, ast.Call)):
                if (
                    self.an._callee(call.func, func.self_class, func.unit)
                    or _terminal(call.func) in self.an.class_nodes
                ):
                    return False  # a function or class of the file may build it from the rank
            assigned = sum(
                isinstance(n, ast.Attribute) and n.attr == attr and isinstance(n.ctx, ast.Store)
                for unit in self.an.units
                for n in ast.walk(unit.tree)
            )
            return assigned == 1
        return False

    def _attribute_length(self, attr: str, depth: int) -> Any:
        """The length of ``self.<attr>`` when its class (with its bases of the file) binds it once, at the top level
        of ``__init__``, and nothing changes it in place (``append``, ``+=``): the length of that value, judged in
        ``__init__``'s own scope (round 31's transformers Trainer: ``self.train_x = torch.randn(64, 6)[rank::world]``
        read by ``range(0, len(self.train_x), 8)`` in ``train``: 32 rows on each of 2 ranks). None otherwise."""
        if self.self_class is None:
            return None
        found = self._init_binding(self.self_class, attr)
        if found is None:
            return None
        func, value = found
        saved = self.scope, self.taint, self.laundered, self.self_class
        self.scope, self.self_class = func.key, func.self_class
        self.taint = self.an.func_taint.get(func.key, set())
        self.laundered = self.an.laundered.get(func.key, {})
        try:
            return self._length(value, depth + 1)
        finally:
            self.scope, self.taint, self.laundered, self.self_class = saved

    def _entry_length(self, table: ast.expr, depth: int) -> Any:
        """The length of ``table[key]`` whatever the key (a rank): a dict, list or tuple literal (or a name bound
        to one) whose entries all have the same known length (round 12's ``TOKENS_PER_STEP[rank]``, a table of
        per-rank requests of 4 steps each); None when they differ or are unknown."""
        if isinstance(table, ast.Name):
            value = self._value(table.id)
            table = value if value is not None else table
        if isinstance(table, ast.Dict) and None not in table.keys:
            entries = table.values
        elif isinstance(table, (ast.List, ast.Tuple)) and not any(isinstance(e, ast.Starred) for e in table.elts):
            entries = table.elts
        else:
            return None
        lengths = [self._length(entry, depth + 1) for entry in entries]
        if not lengths or any(x is None or x == "endless" or not self._uniform(x) for x in lengths):
            return None
        return lengths[0] if all(x == lengths[0] for x in lengths) else None

    def _flow_length(self, name: str, line: int, depth: int) -> Any:
        """The length of ``name`` at ``line`` in a function that assigns it more than once, every time at the top
        level of its body (straight-line code): the last assignment before ``line``, with ``name`` in its value
        standing for the assignment before that one (``x, y = load(); x = x[rank::world]; x = (x - mean) / std``).
        A tensor keeps its rows through arithmetic with other values and through conversions (``.float()``,
        ``.to(...)``). None when the name is assigned anywhere else (a loop, a branch) or lint cannot tell."""
        func = self.an.table.get(self.scope) if self.scope is not None else None
        if func is None or depth > _MAX_DEPTH:
            return None
        top = [s for s in func.node.body if isinstance(s, ast.Assign) and name in _assigned_names(s)]
        anywhere = self._bindings(func, name)
        if len(anywhere) < 2:
            return _NOT_STRAIGHT  # assigned once (or not at all): the other rules decide
        if len(anywhere) != len(top):
            return None
        before = [s for s in top if s.lineno < line]
        if not before:
            return None
        stmt = before[-1]
        pairs = [(value, index) for names, value, index in _assignments([stmt]) if name in names]
        if len(pairs) != 1:
            return None
        value, index = pairs[0]
        if index is not None:  # ``x, y = load()``: element ``index`` of what a function of the file returns
            path = _unpack_path(stmt.targets[0], name)
            return self._returned_element_length(value, path, depth) if path else None
        return self._kept_length(value, name, depth)

    @staticmethod
    def _bindings(func: _Func, name: str) -> list[ast.AST]:
        """The statements of ``func`` (not of nested functions) that bind ``name``."""
        return [
            n
            for n in _own_nodes(func.node.body)
            if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.With, ast.NamedExpr))
            and name in _assigned_names(n)
        ]

    def _kept_length(self, value: ast.expr, name: str, depth: int) -> Any:
        """The length of ``value`` assigned back to ``name``: ``name``'s own length when ``value`` is arithmetic
        on it (``(x - mean) / std``) or a conversion of it (``x.float()``), else what ``value`` itself has."""
        if isinstance(value, ast.BinOp) and isinstance(value.op, _ELEMENTWISE):
            for side, other in ((value.left, value.right), (value.right, value.left)):
                if isinstance(other, ast.Constant) and type(other.value) is int and isinstance(value.op, ast.Mult):
                    return None  # ``xs * 2`` repeats a list
                if isinstance(side, ast.Name) and side.id == name:
                    return self._length(side, depth + 1)
                if isinstance(side, ast.BinOp):
                    kept = self._kept_length(side, name, depth + 1)
                    if kept is not None:
                        return kept
            return None
        if isinstance(value, ast.UnaryOp):
            return self._kept_length(value.operand, name, depth + 1)
        if isinstance(value, ast.Name) and value.id == name:
            return self._length(value, depth + 1)
        if (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr in _CONVERSIONS
            and isinstance(value.func.value, ast.Name)
            and value.func.value.id == name
        ):
            return self._length(value.func.value, depth + 1)
        return self._length(value, depth + 1)

    def _returned_element_length(self, call: ast.expr, path: tuple[int, ...], depth: int) -> Any:
        """The length of the element at ``path`` of the tuple a function of the file returns (its one return)."""
        if not isinstance(call, ast.Call):
            return None
        key = self.an._callee(call.func, self.self_class, self.unit)
        helper = self.an.table.get(key) if key is not None else None
        returns = [n for n in ast.walk(helper.node) if isinstance(n, ast.Return)] if helper is not None else []
        if len(returns) != 1:
            return None
        element: ast.expr | None = returns[0].value
        for index in path:
            if not isinstance(element, (ast.Tuple, ast.List)) or index >= len(element.elts):
                return None
            element = element.elts[index]
        scope, self.scope = self.scope, key
        try:
            return self._length(element, depth + 1)  # type: ignore[arg-type]
        finally:
            self.scope = scope

    def _unpacked_length(self, name: str, depth: int) -> Any:
        """The length of ``name`` unpacked from what a function of the file returns as a tuple it writes out
        (``(x, y), (xv, yv) = make_shards(rank)``, ``return (x, y), (xv, yv)``), from the returned element's own
        value in that function (round 10's ``make_shards``: ``x = torch.randn(32, 4, generator=g)``)."""
        func = self.an.table.get(self.scope) if self.scope is not None else None
        if func is None or len(self._bindings(func, name)) != 1:  # ``x, y = load(); x = x[rank:]``: not load's x
            return None
        found = [
            (n, path)
            for n in _own_nodes(func.node.body)
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.value, ast.Call)
            for path in [_unpack_path(n.targets[0], name)]
            if path
        ]
        if len(found) != 1:
            return None
        (assign, path) = found[0]
        return self._returned_element_length(assign.value, path, depth)

    def _built_length(self, call: ast.Call, depth: int) -> Any:
        """The length of the list a function of the file returns when it builds it with one ``append`` per
        iteration of a loop, and nothing else changes the list (``batches = []``, ``for step in range(STEPS):
        batches.append(...)``, ``return batches``): the loop's length, whatever the items hold (round 10's
        ``make_batches(rank)``: the rank seeds the data, not the count)."""
        key = self.an._callee(call.func, self.self_class, self.unit)
        func = self.an.table.get(key) if key is not None else None
        if func is None:
            return None
        returns = [n for n in ast.walk(func.node) if isinstance(n, ast.Return)]
        if len(returns) != 1 or not isinstance(returns[0].value, ast.Name):
            return None
        name = returns[0].value.id
        made = [
            n
            for n in func.node.body
            if isinstance(n, ast.Assign) and [_dotted(t) for t in n.targets] == [name] and isinstance(n.value, ast.List)
        ]
        uses = [
            n
            for n in ast.walk(func.node)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and _dotted(n.func.value) == name
        ]
        loops = [
            n
            for n in func.node.body
            if isinstance(n, ast.For) and any(isinstance(u, ast.Expr) and u.value in uses for u in n.body)
        ]
        if len(made) != 1 or made[0].value.elts or len(uses) != 1 or len(loops) != 1:
            return None
        loop = loops[0]
        if uses[0].func.attr != "append" or any(  # type: ignore[attr-defined]
            isinstance(n, (ast.Break, ast.Continue, ast.Return, ast.Raise)) for n in ast.walk(loop)
        ):
            return None
        if any(
            name in _target_names(t)
            for n in ast.walk(func.node)
            if isinstance(n, ast.Assign)
            for t in n.targets
            if n is not made[0]
        ):
            return None
        scope, self.scope = self.scope, key
        try:
            return self._length(loop.iter, depth + 1)
        finally:
            self.scope = scope

    def _state(self, state: tuple) -> Any:
        """A context in which the length rules read names as in ``state`` (see :meth:`_yielded_length`)."""
        walker = self

        class _Swap:
            def __enter__(self) -> None:
                self.saved = walker.scope, walker.taint, walker.laundered, walker.self_class, walker.bound
                walker.scope, walker.taint, walker.laundered, walker.self_class, walker.bound = state

            def __exit__(self, *exc: object) -> None:
                walker.scope, walker.taint, walker.laundered, walker.self_class, walker.bound = self.saved

        return _Swap()

    def _bound_length(self, name: str, depth: int) -> Any:
        """The length of a helper's parameter ``name``: that of the argument the call hands it, counted on the
        calling side; a constant length as such, one the same on every rank but unknown as ``"uniform"``."""
        arg, caller = self.bound[name]
        with self._state(caller):
            length = self._length(arg, depth + 1)
            if length is None or (length not in ("uniform", "endless") and not self._uniform(length)):
                raise _UncountedArgument(name)
            if isinstance(length, tuple) and set(length[0]) - {()}:
                return "uniform"
            return length

    def _bound_poly(self, name: str, depth: int) -> Any:
        """A helper's parameter ``name`` as a polynomial: the argument's value on the calling side when it is a
        constant, an opaque atom when it is the same on every rank."""
        arg, caller = self.bound[name]
        with self._state(caller):
            poly = self._poly(arg, depth + 1)
            if poly is None or not self._uniform(poly):
                raise _UncountedArgument(name)
        if set(poly[0]) <= {()}:
            return poly
        return {(name,): 1}, {name: ast.Name(id=name, ctx=ast.Load(), lineno=0, col_offset=0)}

    def _yielded_length(self, call: ast.Call, depth: int) -> Any:
        """``"uniform"`` when a generator function of the file (not a method) yields once per trip of one ``for``
        loop of its body (the statements before it assignments, no ``break``/``continue``/``return``/``raise`` in
        it, no other ``yield``), and that loop's length is the same on every rank given this call's arguments,
        each parameter counted as its argument on the calling side (round 16's ``batches(CORPUS, vocab, rank,
        world_size)``: ``mine = corpus[rank::world_size]``, one batch per ``range(0, len(mine), batch_size)``, 12
        sentences on 2 ranks). A parameter whose argument lint cannot count leaves the count unknown. None
        otherwise."""
        key = self.an._callee(call.func, self.self_class, self.unit)
        func = self.an.table.get(key) if key is not None else None
        if func is None or func.self_class is not None or not isinstance(call.func, ast.Name):
            return None
        body = func.node.body
        yields = [n for n in _own_nodes(body) if isinstance(n, (ast.Yield, ast.YieldFrom))]
        loops = [i for i, stmt in enumerate(body) if isinstance(stmt, ast.For)]
        if len(yields) != 1 or len(loops) != 1 or not isinstance(yields[0], ast.Yield):
            return None
        loop = body[loops[0]]
        before = body[: loops[0]]
        if any(not isinstance(s, (ast.Assign, ast.Expr)) for s in before) or loop.orelse:
            return None
        if not any(isinstance(s, ast.Expr) and s.value is yields[0] for s in loop.body):
            return None
        if any(isinstance(n, (ast.Break, ast.Continue, ast.Return, ast.Raise)) for n in _own_nodes(loop.body)):
            return None
        args = func.node.args
        if args.vararg or args.kwarg or len(call.args) > len(args.args) or args.posonlyargs or args.kwonlyargs:
            return None
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            return None
        given = {p.arg: a for p, a in zip(args.args, call.args)}
        given.update({k.arg: k.value for k in call.keywords if k.arg})
        changed = _changed_names(body) | {n for names, _, _ in _assignments(list(_own_nodes(body))) for n in names}
        if set(given) & changed:
            return None
        caller = self.scope, self.taint, self.laundered, self.self_class, self.bound
        ranked = {p for p, a in given.items() if self.an.mentions_rank(a, self.taint, self.laundered)}
        callee = (
            key,
            (self.an.func_taint.get(key, set()) - {a.arg for a in args.args}) | ranked,  # type: ignore[arg-type]
            self.an.laundered.get(key, {}),
            None,
            {p: (a, caller) for p, a in given.items()},
        )
        with self._state(callee):
            try:
                length = self._length(loop.iter, depth + 1)
            except _UncountedArgument:
                return None
            return "uniform" if length is not None and length != "endless" and self._uniform(length) else None

    def _steady_yields(self, call: ast.Call) -> Any:
        """``"uniform"`` when ``call`` calls a generator of the file (a method of an object built from a class of
        the file too) whose number of yields is decided by nothing that differs between ranks, judged in the
        generator's own scope: every ``yield`` is a statement under loops and ``with`` only (no ``if``, no
        ``try``); each enclosing ``for`` runs over, and each ``while`` tests, values that are the same on every
        rank; and every ``break``, ``continue``, ``return`` and ``raise`` sits under tests that are the same on
        every rank (names an all-reduce or broadcast made equal count from the line after it), the generator's
        parameters rank-dependent where this call passes rank-dependent arguments. gpt-oss's ``generate()``
        (round 41): the object holds the rank's weight shard and sampler, but the token that ends the loop is
        the one rank 0 broadcast. None otherwise."""
        found = self.an.classify(call, self.unit, self.self_class, self.scope)
        func = self.an.table.get(found.target) if found is not None and found.kind == "call" else None
        if func is None:
            return None
        nodes = list(_own_nodes(func.node.body))
        if not any(isinstance(n, ast.Yield) for n in nodes) or any(
            isinstance(n, (ast.YieldFrom, ast.Try)) for n in nodes
        ):
            return None
        args = func.node.args
        if args.vararg or args.kwarg or any(isinstance(a, ast.Starred) for a in call.args):
            return None
        params = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
        if params[:1] == ["self"] and isinstance(call.func, ast.Attribute):
            params = params[1:]
        given = dict(zip(params, call.args))
        given.update({k.arg: k.value for k in call.keywords if k.arg})
        if any(k.arg is None for k in call.keywords):
            return None
        ranked = {p for p, a in given.items() if self.an.mentions_rank(a, self.taint, self.laundered)}
        taint = (self.an.func_taint.get(func.key, set()) - set(params)) | ranked
        laundered = self.an.laundered.get(func.key)

        def rank(expr: ast.expr) -> bool:
            return self.an.mentions_rank(expr, taint, laundered)

        def steady(stmts: list[ast.stmt], tests: list[ast.expr], looped: bool) -> bool:
            for stmt in stmts:
                if isinstance(stmt, _SCOPES):
                    continue
                if isinstance(stmt, (ast.Break, ast.Continue, ast.Return, ast.Raise)):
                    if any(rank(t) for t in tests):
                        return False
                    continue
                if isinstance(stmt, ast.If):
                    if any(isinstance(n, ast.Yield) for n in _own_nodes([stmt])):
                        return False
                    if not steady(stmt.body + stmt.orelse, [*tests, stmt.test], looped):
                        return False
                    continue
                if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
                    head = stmt.test if isinstance(stmt, ast.While) else stmt.iter
                    if rank(head) or stmt.orelse or any(rank(t) for t in tests):
                        return False
                    if not steady(stmt.body, tests, True):
                        return False
                    continue
                if isinstance(stmt, (ast.With, ast.AsyncWith)):
                    if not steady(stmt.body, tests, looped):
                        return False
                    continue
                if any(isinstance(n, ast.Yield) for n in _own_nodes([stmt])) and not (
                    isinstance(stmt, (ast.Expr, ast.Assign)) and isinstance(stmt.value, ast.Yield)
                ):
                    return False  # a yield inside an expression: conditional or repeated
            return True

        return "uniform" if steady(func.node.body, [], False) else None

    def _returned_length(self, call: ast.Call, depth: int) -> Any:
        """``"uniform"`` when a function of the file (not a method) returns, from its one ``return``, an expression
        whose length is the same on every rank given the arguments of this call: judged in the function's own
        scope, its parameters rank-dependent where this call passes a rank-dependent argument (round 26's
        ``make_data(rank, 32, epoch)``: ``list(zip(x.split(8), ...))`` of ``x = torch.randn(n, 6, generator=g)``,
        the rank seeding ``g`` only). None otherwise."""
        key = self.an._callee(call.func, self.self_class, self.unit)
        func = self.an.table.get(key) if key is not None else None
        if func is None or func.self_class is not None or not isinstance(call.func, ast.Name):
            return None
        returns = [n for n in _own_nodes(func.node.body) if isinstance(n, ast.Return)]
        if len(returns) != 1 or returns[0].value is None or isinstance(returns[0].value, ast.Name):
            return None
        args = func.node.args
        if args.vararg or args.kwarg or len(call.args) > len(args.args):
            return None
        bound = {p.arg: a for p, a in zip(args.args, call.args)}
        bound.update({k.arg: k.value for k in call.keywords if k.arg})
        ranked = {
            p
            for p, a in bound.items()
            if self.an.mentions_rank(a, self.taint, self.laundered) and not self._constant_value(a, depth)
        }
        saved = self.scope, self.taint, self.laundered
        self.scope = key
        self.taint = (self.an.func_taint.get(key, set()) - {a.arg for a in args.args}) | ranked
        self.laundered = self.an.laundered.get(key, {})
        try:
            length = self._length(returns[0].value, depth + 1)
            return "uniform" if length is not None and length != "endless" and self._uniform(length) else None
        finally:
            self.scope, self.taint, self.laundered = saved

    def _split_length(self, call: ast.Call, depth: int) -> Any:
        """This rank's share of ``split_between_processes(x)``: contiguous chunks, the first ``len(x) % world``
        ranks one item longer (``accelerate/state.py``); with ``apply_padding=True`` every share has the same
        length. A constant length is decided like ``seq[rank::world]`` (:meth:`_world_split`); unlike a slice,
        one lint cannot see is reported: accelerate offers ``apply_padding=True`` to say the shares are even."""
        if any(
            k.arg == "apply_padding" and isinstance(k.value, ast.Constant) and k.value.value is True
            for k in call.keywords
        ):
            return "uniform"
        total = self._length(call.args[0], depth + 1)
        if isinstance(total, tuple) and set(total[0]) <= {()}:
            n, world = total[0].get((), 0), self.an.world_size
            if world is not None:
                return ({(): n // world}, {}) if n % world == 0 else None
            return None if any(n % w for w in _USUAL_WORLDS) else "uniform"
        return None  # a length lint cannot see: uneven unless it divides, and `apply_padding=True` says so

    def _slice_length(self, seq: ast.expr, cut: ast.Slice, depth: int) -> Any:
        """``seq[r::w]`` or ``seq[r:n:w]`` with ``r`` a rank, when ``n`` (or ``len(seq)``) is a multiple of
        ``w``: every rank gets ``n / w`` items. ``seq[:]`` has ``seq``'s length. Anything else is unknown
        (``data[rank * n:(rank + 1) * n]`` is short on the last rank unless ``data`` is long enough).

        A constant length ``n`` is decided against the world size when the file states one (``WORLD_SIZE = 2``,
        ``nprocs=2``, ``--nproc-per-node 2``: see :meth:`_Analysis._world_size`): ``n % w`` decides. Without
        one, an odd ``n`` is uneven on every even world size (reported), an even one cannot be decided (quiet).
        A ``seq`` whose length lint cannot see (data returned by a function, a file listing) is quiet too:
        lint does not guess; the run shows an uneven split as the rank that waits in its extra step."""
        if cut.lower is None and cut.upper is None and cut.step is None:
            return self._length(seq, depth + 1)
        if cut.step is None or cut.lower is None:
            return None
        step = self._poly(cut.step, depth + 1)
        if step is None or len(step[0]) != 1:
            return None
        [(factor, coeff)] = step[0].items()
        if coeff != 1 or len(factor) != 1 or self.an.mentions_rank(step[1][factor[0]], self.taint, self.laundered):
            return None
        total = self._poly(cut.upper, depth + 1) if cut.upper is not None else self._length(seq, depth + 1)
        decided = self._world_split(total, step[1][factor[0]])
        if decided is not None:
            return decided
        if not isinstance(total, tuple) or not all(factor[0] in key for key in total[0]):
            return None
        per_rank: dict[tuple[str, ...], int] = {}
        for key, c in total[0].items():
            rest = list(key)
            rest.remove(factor[0])
            per_rank[tuple(rest)] = c
        return per_rank, total[1]

    def _world_split(self, total: Any, step: ast.AST) -> Any:
        """The per-rank length of ``total`` items dealt round-robin over the world (``seq[rank::world]``,
        ``range(rank, n, world)``), when lint can decide it; None when the split is uneven or not decided here.
        A constant ``n`` is checked against the world size the file states; without one, ``n`` that is not a
        multiple of each of the usual world sizes (2, 4 and 8 ranks) is uneven on one of them (None), and a
        multiple of all three is not decided. A length lint cannot see (data
        returned by a function, a file listing, ``len(x)`` of such data) cannot be decided either: then it
        stays quiet ("uniform") rather than guess, and an uneven split shows in the run."""
        if not self._world_step(step):
            return None
        if isinstance(total, tuple) and set(total[0]) <= {()}:
            n, world = total[0].get((), 0), self.an.world_size
            if world is not None:
                return ({(): n // world}, {}) if n % world == 0 else None
            return None if any(n % w for w in _USUAL_WORLDS) else "uniform"
        if total is None or total == "uniform":
            return "uniform"
        if isinstance(total, tuple) and self._uniform(total):
            name = ast.unparse(step)
            if all(name in key for key in total[0]):
                return None  # a symbolic multiple of the world size: decided by the caller
            return "uniform"
        return None

    def _blocks_dealt_evenly(self, start: ast.expr, total: Any, step: ast.expr) -> bool:
        """``range(c * rank, n, c * world)``: blocks of ``c`` items dealt round-robin (round 18's
        ``[data[i:i + 4] for i in range(4 * rank, len(data), 4 * world)]``). Every rank takes ``n / (c * world)``
        of them when ``n`` is a multiple of ``c * world``: a constant with the world size the file states, or a
        polynomial each of whose terms holds the world size with a coefficient that ``c`` divides
        (``len(torch.randn(8 * world * 4, 6))``)."""
        scaled_start, scaled_step = _scaled(start), _scaled(step)
        if scaled_start is None or scaled_step is None or scaled_start[0] != scaled_step[0]:
            return False
        c, rank, world = scaled_start[0], scaled_start[1], scaled_step[1]
        if c < 1 or not isinstance(rank, ast.Name) or not self._world_step(world) or not isinstance(total, tuple):
            return False
        terms = {key: coeff for key, coeff in total[0].items() if coeff}
        if set(terms) <= {()}:
            n, size = terms.get((), 0), self.an.world_size
            return size is not None and n % (c * size) == 0
        nodes = total[1]

        def worldly(atom: str) -> bool:  # the world size, as written or as the name stands for
            return atom == ast.unparse(world) or (atom in nodes and self._world_step(nodes[atom]))

        return all(key and any(worldly(atom) for atom in key) and coeff % c == 0 for key, coeff in terms.items())

    def _world_step(self, node: ast.AST) -> bool:
        """Whether a slice step is the world size: ``get_world_size()`` (of the default group), or a name
        assigned from it or called ``world``/``world_size``/``num_replicas``/``num_processes``."""
        for _ in range(_MAX_DEPTH):
            if isinstance(node, ast.Call):
                return _terminal(node.func) == "get_world_size" and not node.args and not node.keywords
            if not isinstance(node, ast.Name):
                return False
            if node.id in ("world", "world_size", "num_replicas", "num_processes", "nprocs"):
                return True
            if node.id in self.bound:  # a helper's parameter: what the call hands it
                arg, caller = self.bound[node.id]
                with self._state(caller):
                    return self._world_step(arg)
            value = self._value(node.id)
            if value is None:
                return False
            node = value
        return False

    def _negate(self, test: ast.expr | None, text: str) -> str:
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self.unit.text(test.operand)
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _NEGATE:
            flipped = ast.Compare(test.left, [_NEGATE[type(test.ops[0])]()], test.comparators)
            return ast.unparse(flipped)
        if isinstance(test, (ast.Name, ast.Attribute, ast.Call)):
            return f"not {text}"
        return f"not ({text})"

    # -- simulation over rank values

    def _escape(self, item: _Item) -> _Leave | None:
        """Whether some ranks leave the enclosing block at ``item`` while others go on. With no ``return``,
        ``break``, ``continue`` or exit under ``item`` none does, and no world is run (attack30 a10: a 400-case
        rank dispatch ran every world of every case's tail)."""
        if not self._exits(item):
            return None
        groups = self._outcomes([item], None)
        if groups is None:
            found = self._find_exit([item], None)
            return _Leave(found[0], found[1], frozenset({found[1].status or ""})) if found and found[1] else None
        statuses: set[str] = set()
        for group in groups:
            seen = {status for _, status in group}
            if len(seen) > 1:
                statuses |= {s for s in seen if s}
        if not statuses:
            return None
        cond, exit_item = self._find_exit([item], None) or (item.text or "a rank-dependent condition", None)
        return _Leave(cond, exit_item, frozenset(statuses))

    def _find_exit(self, items: list[_Item], cond: str | None, returns_only: bool = False) -> tuple[str, _Item] | None:
        for item in items:
            if item.kind == "exit" and cond and (item.status == "return" or not returns_only):
                return cond, item
            if item.kind == "if":
                body_cond = item.text if item.rank else cond
                else_cond = self._negate(item.test, item.text) if item.rank else cond
                found = self._find_exit(item.body, body_cond, returns_only) or self._find_exit(
                    item.orelse, else_cond, returns_only
                )
                if found:
                    return found
            if item.kind == "loop":
                found = self._find_exit(item.body, cond, True)
                if found:
                    return found
        return None

    def _balanced(self, items: list[_Item], end: str | None) -> bool:
        groups = self._outcomes(items, end, until_two=True)
        return groups is not None and all(len(group) == 1 for group in groups)

    def _exits(self, item: _Item) -> bool:
        """Whether an exit (``return``, ``break``, ``continue``, ``raise``, ``sys.exit``) is in ``item`` or under
        it; worked out once per item."""
        cache = self.__dict__.setdefault("_exits_of", {})
        kept = cache.get(id(item))
        if kept is not None and kept[0] is item:
            return kept[1]
        found = item.kind == "exit" or any(self._exits(i) for i in (*item.body, *item.orelse))
        cache[id(item)] = (item, found)
        return found

    def _outcomes(
        self, items: list[_Item], end: str | None, until_two: bool = False
    ) -> list[set[tuple[tuple, str | None]]] | None:
        """For each assignment of rank-independent conditions, the set of (trace, exit) over rank values. With no
        rank-dependent condition each such set holds one outcome, and no caller needs more than how many: none is
        worked out (a 600-case ``elif`` dispatch on a plain value ran 600 worlds of 600 tests: attack21 a05).
        ``until_two``: stop at the first group of two outcomes (enough to tell the items are not balanced)."""
        atoms: dict[str, tuple[bool, set[int]]] = {}
        self._atoms(items, atoms)
        ranked = sorted(k for k, (rank, _) in atoms.items() if rank)
        if not ranked:
            return []
        if math.prod(len(points) for _, points in atoms.values()) > _MAX_WORLDS:
            return None
        # the worlds are told apart by the atoms outside the items' constant `if`s only (:meth:`_constant`): an
        # atom's values change nothing else, and the sets of outcomes, over fewer worlds, are the same
        atoms = {}
        for item in items:
            for key, (rank, points) in self._reduced_atoms(item).items():
                atoms.setdefault(key, (rank, set()))[1].update(points)
        ranked = sorted(k for k, (rank, _) in atoms.items() if rank)
        plain = sorted(k for k, (rank, _) in atoms.items() if not rank)
        groups = []
        for plain_values in itertools.product(*(sorted(atoms[k][1]) for k in plain)):
            world = dict(zip(plain, plain_values))
            group = set()
            for rank_values in itertools.product(*(sorted(atoms[k][1]) for k in ranked)):
                world.update(zip(ranked, rank_values))
                trace, status = self._run(items, world)
                group.add((trace, status or end))
                if until_two and len(group) > 1:
                    return [group]
            groups.append(group)
        return groups

    def _reduced_atoms(self, item: _Item, own: bool = False) -> dict[str, tuple[bool, set[int]]]:
        """The atoms :meth:`_run` of ``item`` reads: those of :meth:`_item_atoms` less what lies under a constant
        ``if`` (none, when ``item`` is one, unless ``own``); once per item."""
        if not own and self._constant(item) is not None:
            return {}
        cache = self.__dict__.setdefault("_reduced_of", {})
        kept = cache.get(id(item))
        if kept is not None and kept[0] is item:
            return kept[1]
        atoms: dict[str, tuple[bool, set[int]]] = {}
        self._own_test_atoms(item, atoms)
        for child in (*item.body, *item.orelse):
            for key, (rank, points) in self._reduced_atoms(child).items():
                atoms.setdefault(key, (rank, set()))[1].update(points)
        cache[id(item)] = (item, atoms)
        return atoms

    def _constant(self, item: _Item) -> tuple[tuple, str | None] | None:
        """The one outcome (trace, exit) of a rank-dependent ``if`` that has the same in every world, else None;
        worked out once per item, over the worlds of its own test and of what under it is not constant. An
        ``elif`` chain whose cases all make the same collectives is one outcome at each case, and the case
        above runs only its own test's worlds (attack30 a10: each case ran every world of its tail, cubic in the
        cases)."""
        if item.kind != "if" or not item.dynamic:
            return None
        cache = self.__dict__.setdefault("_constant_of", {})
        kept = cache.get(id(item))
        if kept is not None and kept[0] is item:
            return kept[1]
        atoms = self._reduced_atoms(item, own=True)
        names = sorted(atoms)
        found: tuple[tuple, str | None] | None = None
        if math.prod(len(points) for _, points in atoms.values()) <= _MAX_WORLDS:
            seen: set[tuple[tuple, str | None]] = set()
            for values in itertools.product(*(sorted(atoms[k][1]) for k in names)):
                world = dict(zip(names, values))
                taken = world[item.text] if item.test is None else self._eval(item.test, world)
                seen.add(self._run(item.body if taken else item.orelse, world))
                if len(seen) > 1:
                    break
            if len(seen) == 1:
                [found] = seen
        cache[id(item)] = (item, found)
        return found

    def _own_test_atoms(self, item: _Item, atoms: dict[str, tuple[bool, set[int]]]) -> None:
        """The atoms of ``item``'s own test, when it is a rank-dependent ``if`` (not what lies under it)."""
        if item.kind == "if" and item.dynamic:
            if item.test is None:
                atoms.setdefault(item.text, (item.rank, set()))[1].update((0, 1))
            else:
                self._test_atoms(item.test, atoms)

    def _atoms(self, items: list[_Item], atoms: dict[str, tuple[bool, set[int]]]) -> None:
        for item in items:
            for key, (rank, points) in self._item_atoms(item).items():
                atoms.setdefault(key, (rank, set()))[1].update(points)

    def _item_atoms(self, item: _Item) -> dict[str, tuple[bool, set[int]]]:
        """The atoms of ``item`` and everything under it, worked out once per item (each ``if`` of a chain asked
        for its whole subtree: quadratic in a 600-case ``elif``, attack21 a05)."""
        cache = self.__dict__.setdefault("_atoms_of", {})
        kept = cache.get(id(item))
        if kept is not None and kept[0] is item:
            return kept[1]
        atoms: dict[str, tuple[bool, set[int]]] = {}
        self._own_test_atoms(item, atoms)
        self._atoms(item.body, atoms)
        self._atoms(item.orelse, atoms)
        cache[id(item)] = (item, atoms)
        return atoms

    def _test_atoms(self, test: ast.expr, atoms: dict[str, tuple[bool, set[int]]]) -> None:
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self._test_atoms(test.operand, atoms)
        if isinstance(test, ast.BoolOp):
            for value in test.values:
                self._test_atoms(value, atoms)
            return None
        compare = _int_compare(test)
        expr = compare[0] if compare else test
        points = {0, 1}
        if compare:
            points |= {p for c in compare[2] if c >= 0 for p in (c, c + 1)}
        rank = self.an.mentions_rank(expr, self.taint, self.laundered)
        atoms.setdefault(ast.unparse(expr), (rank, set()))[1].update(points)
        return None

    def _eval(self, test: ast.expr, world: dict[str, int]) -> bool:
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return not self._eval(test.operand, world)
        if isinstance(test, ast.BoolOp):
            values = [self._eval(v, world) for v in test.values]
            return all(values) if isinstance(test.op, ast.And) else any(values)
        cache = self.__dict__.setdefault("_tests_of", {})  # the atom and comparison of a test, worked out once
        kept = cache.get(id(test))
        if kept is None or kept[0] is not test:
            compare = _int_compare(test)
            kept = cache[id(test)] = (test, ast.unparse(compare[0] if compare else test), compare)
        _, atom, compare = kept
        if compare:
            return _COMPARE[compare[1]](world[atom], compare[2])
        return bool(world[atom])

    #: How many (item, world) outcomes of ``if`` items :meth:`_run` keeps at most (about 200 bytes each); past
    #: that it forgets the least recently used
    _KEPT_RUNS = 200_000

    def _run_if(self, item: _Item, world: dict[str, int]) -> tuple[tuple, str | None]:
        """:meth:`_run` of one rank-dependent ``if``, kept per item and values of the atoms under it: a chain
        ``if r == 0 ... elif r == n`` asks each case's tail for the same worlds again (attack30 a10: without this
        the worlds of a 400-case dispatch ran every case's tail, cubic in the cases)."""
        constant = self._constant(item)
        if constant is not None and not self._foreign_reads(item, world):
            return constant
        chain = self._chain_of(item)
        if chain is not None and chain[1] > 0:  # an elif case with cases after it: straight to the one taken
            atom, place, shared = chain
            places = shared["cases"].get(world[atom], ())
            at = bisect.bisect_right(places, place) - 1
            taken_item = shared["at"][places[at]] if at >= 0 else None
            return self._run(taken_item.body if taken_item else shared["last"].orelse, world)
        runs = self.__dict__.setdefault("_runs_of", collections.OrderedDict())
        key = (
            id(item),
            *(world[a] for a in self._reduced_atoms(item)),
            *(world.get(a) for a in self._plain_reads(item)),
        )
        kept = runs.get(key)
        if kept is not None and kept[0] is item:
            runs.move_to_end(key)
            return kept[1]
        taken = world[item.text] if item.test is None else self._eval(item.test, world)
        outcome = self._run(item.body if taken else item.orelse, world)
        if len(runs) >= self._KEPT_RUNS:
            runs.popitem(last=False)
        runs[key] = (item, outcome)
        return outcome

    def _plain_atoms(self, test: ast.expr) -> tuple[str, ...]:
        """The atoms of the test of a plain ``if`` (one whose test is not on the rank and under which no rank
        leaves or branches), worked out once per test."""
        cache = self.__dict__.setdefault("_plain_atoms_of", {})
        kept = cache.get(id(test))
        if kept is None or kept[0] is not test:
            atoms: dict[str, tuple[bool, set[int]]] = {}
            self._test_atoms(test, atoms)
            kept = cache[id(test)] = (test, tuple(sorted(atoms)))
        return kept[1]

    def _plain_taken(self, item: _Item, world: dict[str, int]) -> bool | None:
        """Which way a plain ``if`` goes in ``world``, when every atom of its test is one the world sets (the
        same test as a rank-dependent ``if``'s, PufferDrive's ``if dist.is_initialized():`` around both the
        early ``barrier(); return`` of the ranks other than 0 and rank 0's closing ``barrier()``): the value of a
        test that does not depend on the rank is the same on every rank, so both ``if``s go the same way in one
        world. Else None: the ``if`` is one opaque step of the trace, alike on every rank."""
        if item.test is None:
            return None
        atoms = self._plain_atoms(item.test)
        if not atoms or any(a not in world for a in atoms):
            return None
        return self._eval(item.test, world)

    def _plain_reads(self, item: _Item) -> tuple[str, ...]:
        """The atoms of the tests of the plain ``if``s under ``item`` (:meth:`_plain_taken` reads them when the
        world sets them), once per item."""
        cache = self.__dict__.setdefault("_plain_reads_of", {})
        kept = cache.get(id(item))
        if kept is not None and kept[0] is item:
            return kept[1]
        found: set[str] = set()
        for child in (*item.body, *item.orelse):
            if child.kind == "if" and not child.dynamic and child.test is not None:
                found.update(self._plain_atoms(child.test))
            found.update(self._plain_reads(child))
        reads = tuple(sorted(found))
        cache[id(item)] = (item, reads)
        return reads

    def _foreign_reads(self, item: _Item, world: dict[str, int]) -> bool:
        """Whether ``world`` sets an atom a plain ``if`` under ``item`` reads that ``item``'s own worlds (those
        its constant outcome was worked out over) do not, while it sets every atom of ``item``'s own: the
        constant outcome then has that ``if`` as an opaque step where this world takes its branch."""
        own = self._reduced_atoms(item, own=True)
        return any(a in world and a not in own for a in self._plain_reads(item)) and all(a in world for a in own)

    @staticmethod
    def _equality_case(item: _Item) -> tuple[str, int] | None:
        """(atom, constant) of a rank-dependent ``if atom == constant``."""
        if item.kind != "if" or not item.dynamic or item.test is None:
            return None
        compare = _int_compare(item.test)
        if compare is None or compare[1] is not ast.Eq or len(compare[2]) != 1:
            return None
        return ast.unparse(compare[0]), compare[2][0]

    def _chain_of(self, item: _Item) -> tuple[str, int, dict] | None:
        """For a case of an ``elif`` chain ``if a == c0: ... elif a == c1: ...`` (each ``else`` the next case
        alone): (the atom, how many cases come after it, what the chain shares: the places of the cases by
        constant, the case at each place, the last case). The first case whose constant is the atom's value is
        the branch :meth:`_run` takes, else the last case's ``else``: a world run from the top of an n-case
        chain went through every case above its own (quadratic in the cases). Worked out once per case."""
        if "_chain" in item.__dict__:
            return item.__dict__["_chain"]
        path, current = [], item
        while "_chain" not in current.__dict__:
            case = self._equality_case(current)
            if case is None:
                current.__dict__["_chain"] = None
                break
            path.append((current, case))
            if len(current.orelse) != 1 or current.orelse[0].kind != "if":
                break
            current = current.orelse[0]
        for member, (atom, constant) in reversed(path):
            after = member.orelse[0].__dict__.get("_chain") if len(member.orelse) == 1 else None
            if after is not None and after[0] == atom:
                place, shared = after[1] + 1, after[2]
            else:
                place, shared = 0, {"last": member, "cases": {}, "at": {}}
            shared["cases"].setdefault(constant, []).append(place)
            shared["at"][place] = member
            member.__dict__["_chain"] = (atom, place, shared)
        return item.__dict__["_chain"]

    def _run(self, items: list[_Item], world: dict[str, int]) -> tuple[tuple, str | None]:
        """The trace of ``items`` in one world, and how it leaves (None: falls through)."""
        trace: list[Any] = []
        for item in items:
            if item.kind == "op":
                # a call of a function of the file that always makes the same collectives counts as those
                # (review87l C1: `save_and_sync()` on rank 0 and `sync()` elsewhere both make one barrier)
                fixed = self.an.fixed_collectives(item.key[1]) if item.key[0] == "call" else None
                trace.extend(fixed) if fixed is not None else trace.append(item.key)
            elif item.kind == "exit":
                return tuple(trace), item.status
            elif item.kind == "if" and not item.dynamic:
                taken = self._plain_taken(item, world)
                if taken is None:
                    trace.append(_key(item))
                else:  # no exit under a plain if: it falls through
                    trace.extend(self._run(item.body if taken else item.orelse, world)[0])
            elif item.kind == "if":
                sub, status = self._run_if(item, world)
                trace.extend(sub)
                if status:
                    return tuple(trace), status
            elif item.kind == "loop":
                body, status = self._run(item.body, world)
                orelse, _ = self._run(item.orelse, world)
                if not body and not orelse and status != "return":
                    continue  # a loop that makes no collective and cannot return (writing shards) changes no trace
                trace.append(("loop", item.text, body, status or "continue", orelse))
                if status == "return":
                    return tuple(trace), status
        return tuple(trace), None


# --------------------------------------------------------------------------- what orders what, statically


class _Order:
    """Two checks of one scope's straight-line order, from the ops table's ordering columns (:mod:`ops`):

    * ``p2p-order``: outside any ``if``/``while`` (a pipeline's ``if not is_first_stage:`` is a rank test by
      another name), every rank makes a blocking ``send`` before its blocking
      ``recv`` (on gloo a send returns only once the peer posted its receive) or a ``recv`` before its ``send``:
      each rank waits for a peer that waits for it.
    * ``file-race``: a file written under a rank-dependent condition (``if rank == 0: torch.save(x, path)``,
      ``open(path, "w")``, ``os.replace(tmp, path)``) is read by other ranks (``torch.load(path)``, ``open(path)``)
      with nothing between them that orders the write before the read: no collective (or call of a function
      that reaches one), point-to-point call, store ``wait``/``get``, call of a parameter (a callback lint cannot
      see into) or ``while`` loop that polls the file; a write inside ``with main_process_first():`` (or any
      context manager that makes a collective) is ordered before the other ranks enter. A collective called with
      ``async_op=True`` orders nothing when it returns its Work handle (:mod:`barrierlab.ordering`: "an async call
      orders nothing when it returns; its ``Work.wait()`` gets the edges the blocking call would have"): the
      writes before it are ordered only from a ``wait()`` of that handle on (``work.wait()``,
      ``dist.barrier(async_op=True).wait()``; any ``wait()`` once the handle went elsewhere than a plain name).

    A removal (``os.remove``/``os.unlink``/``Path.unlink``, ``shutil.rmtree`` of a folder a read path is built on)
    under a rank-dependent condition after reads by other ranks, with nothing that orders between them, is a
    ``file-race`` too: the reads must come before the removal (:data:`barrierlab.ordering.ORDERERS_BEFORE_REMOVAL`);
    so is a read by the other ranks after it with nothing between (``if rank == 0: os.remove(p)`` / ``else:
    torch.load(p)``, review67b M2): the remover does not wait for them.

    A look at a file (``os.path.exists/isfile/isdir/lexists/getsize``, ``Path.exists()/is_file()/is_dir()``) is a
    read of its state (review68b M1), except inside a print or a logger's call, and in the test of an ``if``
    around the looking rank's own removal of it (``if rank == 0 and os.path.exists(p): os.remove(p)``).

    Every rank's write to a file of its own in one folder (``os.path.join(folder, f"s{rank}")``, ``Path(folder) /
    f"{rank}.pt"``, ``f"{folder}/part_{rank}.json"``; names assigned once in the scope followed) is a ``file-race``
    with a read under a rank-dependent condition that lists the folder (``os.listdir``, ``os.scandir``, ``os.walk``,
    ``glob.glob`` of a pattern in it, ``Path.iterdir()``/``glob()``) or reads or looks at another rank's file there
    (a name the write's pattern makes, ``"s3"`` or ``f"s{r}"``, not the write's own ``f"s{rank}"``), with nothing
    between that orders every rank's write before it (review69b M2): a broadcast or scatter orders only its root's
    write, a gather or reduce every rank's but only for a reader on its ``dst``, an async call only from its wait.

    Paths are matched by their text within the scope; writes and reads in other functions are not followed."""

    def __init__(self, an: _Analysis, unit: _Unit, taint: set[str], self_class: str | None, scope: str | None):
        self.an, self.unit, self.taint, self.self_class, self.scope = an, unit, taint, self_class, scope
        self.laundered = an.laundered.get(scope, {})
        self.writes: dict[str, tuple[ast.Call, tuple[str, ...], str]] = {}
        self.folders: dict[str, tuple[ast.Call, tuple[str, ...]]] = {}  # made under a condition on the rank
        self.first_p2p: tuple[str, ast.Call] | None = None
        self.sheltered = 0  # inside a with block whose context manager orders (main_process_first)
        #: async collectives whose wait has not come yet: the name their Work handle went to (None: elsewhere, a
        #: list or a call; "": dropped), the call, and what was pending when it was called (the writes and
        #: folders its wait orders)
        self.unwaited: list[tuple[str | None, ast.Call, dict[str, dict]]] = []
        self.handles: dict[int, str] = {}  # id of a call -> the plain name its result is assigned to
        #: reads since the last call that orders: path -> (the read, its conditions), for a removal after them
        self.reads: dict[str, list[tuple[ast.Call, tuple[str, ...]]]] = {}
        self.last_orderer: ast.Call | None = None
        #: removals under a condition on the rank since the last call that orders: path -> (the removal, its
        #: conditions, how, whether a folder), for a read by the other ranks after it (review67b M2)
        self.removals: dict[str, tuple[ast.Call, tuple[str, ...], str, bool]] = {}
        self.dropped: set[int] = set()  # ids of calls made as statements of their own (the result dropped)
        #: the ifs being walked, outermost first: the ids of the calls in the test, the conditions outside the if and
        #: the test's text. A look there (``if rank == 0 and os.path.exists(p): os.remove(p)``) decides only whether
        #: the looking rank removes the file itself, not what a reader of the file finds
        self.guards: list[tuple[set[int], tuple[str, ...], str]] = []
        self.reported: set[int] = set()  # ids of nodes inside a print or a logger's call: their answer decides nothing
        self.looks: set[int] = set()  # ids of the reads that only ask whether the file is there (os.path.exists)
        self.conditional = 0  # inside an if or while, whatever its test
        func = an.table.get(scope) if scope is not None else None
        args = func.node.args if func is not None else None
        self.params = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)} if args else set()
        #: review69b M2: files each rank writes to a path of its own in one folder (``os.path.join(folder,
        #: f"s{rank}")``), since the last call that orders every rank's write: write path -> (the write, its
        #: conditions, how, the folder, the pattern of the file's name, the roots of gathers/reduces since, which
        #: order the writes before a read on that root only)
        self.peer_writes: dict[str, _PeerWrite] = {}
        body = func.node.body if func is not None else unit.tree.body
        counts: dict[str, int] = {}
        values: dict[str, ast.expr] = {}
        for names, value, position in _assignments(_own_nodes(body)):
            for name in names:
                counts[name] = counts.get(name, 0) + 1
                if position is None and len(names) == 1:
                    values[name] = value
        #: names assigned once in the scope (``path = os.path.join(folder, f"s{rank}")``): a path's parts
        self.once = {name: value for name, value in values.items() if counts[name] == 1}

    def block(self, stmts: list[ast.stmt], ctx: tuple[str, ...]) -> None:
        guarded = 0  # statements after `if test: ... return` run only where the test is false
        for stmt in stmts:
            self._stmt(stmt, ctx)
            if (
                isinstance(stmt, ast.If)
                and not stmt.orelse
                and (_skips(stmt.body) or isinstance(stmt.body[-1], ast.Raise))
            ):
                guarded += 1
                self.conditional += 1
                if self.an.mentions_rank(stmt.test, self.taint, self.laundered, files=False):
                    ctx = (*ctx, f"not ({self.unit.text(stmt.test)})")
        self.conditional -= guarded

    def _stmt(self, stmt: ast.stmt, ctx: tuple[str, ...]) -> None:
        if isinstance(stmt, _SCOPES):
            return
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and isinstance(stmt.value, ast.Call):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if len(targets) == 1 and isinstance(targets[0], ast.Name):
                self.handles[id(stmt.value)] = targets[0].id
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            self.dropped.add(id(stmt.value))
        if isinstance(stmt, (ast.If, ast.While)):
            if isinstance(stmt, ast.While) and any(_file_check(n) for n in ast.walk(stmt.test)):
                self.writes.clear()  # the readers poll until the file is there
                self.folders.clear()
                self.peer_writes.clear()
            self._expr(stmt.test, ctx)
            calls = {id(n) for n in ast.walk(stmt.test) if isinstance(n, ast.Call)}
            self.guards.append((calls, ctx, self.unit.text(stmt.test)))
            # "create the file if it is missing, then read it" is one rank's own order: file checks do not count
            self.conditional += 1  # p2p-order looks only at calls under no condition at all
            if self.an.mentions_rank(stmt.test, self.taint, self.laundered, files=False):
                text = self.unit.text(stmt.test)
                self.block(stmt.body, (*ctx, text))
                self.block(stmt.orelse, (*ctx, f"not ({text})"))
            else:
                self.block(stmt.body, ctx)
                self.block(stmt.orelse, ctx)
            self.conditional -= 1
            self.guards.pop()
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            self._expr(stmt.iter, ctx)
            rank = self.an.mentions_rank(stmt.iter, self.taint, self.laundered, files=False)
            self.block(stmt.body, (*ctx, f"for over {self.unit.text(stmt.iter)}") if rank else ctx)
            self.block(stmt.orelse, ctx)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                self._expr(item.context_expr, ctx)
            calls = [i.context_expr for i in stmt.items if isinstance(i.context_expr, ast.Call)]
            if any(self._orders(c) for c in calls):  # main_process_first(): the others enter after the writer left
                self.sheltered += 1
            self.block(stmt.body, ctx)
            if any(self._orders(c) for c in calls):
                self.sheltered -= 1
        elif isinstance(stmt, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            self.block(stmt.body, ctx)
            for handler in stmt.handlers:
                self.block(handler.body, ctx)
            self.block(stmt.orelse, ctx)
            self.block(stmt.finalbody, ctx)
        elif isinstance(stmt, ast.Match):
            self._expr(stmt.subject, ctx)
            for case in stmt.cases:
                self.block(case.body, ctx)
        else:
            for child in ast.iter_child_nodes(stmt):
                if isinstance(child, ast.expr):
                    self._expr(child, ctx)

    def _expr(self, node: ast.expr, ctx: tuple[str, ...]) -> None:
        """Calls in the order they run: arguments before the call that takes them."""
        if isinstance(node, ast.Lambda):
            return
        if isinstance(node, ast.Call) and (_terminal(node.func) or "") in _REPORTING:
            self.reported |= {id(n) for n in ast.walk(node)}
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self._expr(child, ctx)
            elif isinstance(child, ast.keyword):
                self._expr(child.value, ctx)
            elif isinstance(child, ast.comprehension):
                for part in (child.iter, *child.ifs):
                    self._expr(part, ctx)
        if isinstance(node, ast.Call):
            self._call(node, ctx)

    def _call(self, call: ast.Call, ctx: tuple[str, ...]) -> None:
        full = self.an._resolve(call.func, self.unit) if _dotted(call.func) else ""
        name = full.rpartition(".")[2]
        if full.startswith("torch.distributed.") and name in _BLOCKING_P2P:
            self._p2p(_BLOCKING_P2P[name], call, ctx)
        self._waits_async(call)
        if self._orders(call):
            if _async_op(call):  # review64b M2: it orders nothing until its Work's wait() returns
                pending = {
                    "writes": dict(self.writes),
                    "folders": dict(self.folders),
                    "removals": dict(self.removals),
                    "peer_writes": dict(self.peer_writes),
                    "reads": {path: list(found) for path, found in self.reads.items()},
                }
                # a dropped handle (a statement of its own) is never waited: unwaited-async names the call
                handle = "" if id(call) in self.dropped else self.handles.get(id(call))
                self.unwaited.append((handle, call, pending))
                return
            # review65b M5: a broadcast or scatter holds the other ranks until the root has sent, so it orders the
            # root's writes before their reads; that is all torch guarantees (rank 3's write, then broadcast(src=0),
            # then rank 0's read: rank 0 waits for nobody; gloo's tree orders more, rank 1's write before rank 3's
            # read on 4 ranks, review70b M5, but no program should count on it); a reduce or gather holds only the root
            root = _literal_root(call, name)
            if root is not None:
                self.writes = {path: w for path, w in self.writes.items() if not _written_by(w[1], root, name)}
                self.removals = {path: r for path, r in self.removals.items() if not _written_by(r[1], root, name)}
                if name in _ROOT_SENDS:  # only the root's own write is ordered: the others' still race
                    self.peer_writes = {
                        path: w for path, w in self.peer_writes.items() if not _written_by(w.where, root, name)
                    }
                else:  # a reduce or gather holds its root until every rank has sent: ordered for a reader there
                    self.peer_writes = {p: w._replace(roots=w.roots | {root}) for p, w in self.peer_writes.items()}
            else:
                self.writes.clear()
                self.removals.clear()
                self.peer_writes.clear()
            self.folders.clear()
            self.reads.clear()
            self.last_orderer = call
            return
        made = _made_folder(call, full)
        if made is not None:
            if ctx and not self.sheltered:
                self.folders.setdefault(made, (call, ctx))
            else:  # every rank makes it itself (makedirs(exist_ok=True) on every rank)
                self.folders.pop(made, None)
            return
        for path in _used_paths(call, full):
            for folder, (mkdir, where) in list(self.folders.items()):
                if not _implied(where, ctx) and _inside(path, folder):
                    self._folder_race(mkdir, folder, call, where)
                    del self.folders[folder]
        removed = _removed_path(call, full)
        if removed is not None:
            if ctx and not self.sheltered:
                self._removal(call, ctx, *removed)
                self.removals[removed[0]] = (call, ctx, removed[1], removed[2])
            return
        written = _written_path(call, full)
        if written is not None:
            self.removals.pop(written[0], None)  # written again: a read after it races with the write, if at all
        if written is not None and not self.sheltered:
            self._peer_write(call, ctx, *written)
        if written is not None and ctx and not self.sheltered:
            self.writes[written[0]] = (call, ctx, written[1])
            return
        read = _read_path(call, full)
        if read is None and id(call) not in self.reported:
            read = _looked_path(call, full)  # review68b M1: rank 0's os.path.exists(p) saw no file
            if read is not None:
                self.looks.add(id(call))
        if read is not None:
            self.reads.setdefault(read, []).append((call, ctx))
            self._read_after_removal(call, ctx, read)
        if read is not None and read in self.writes:
            entry = self.writes[read]
            write, where, how = entry
            if where != ctx[: len(where)] and not self._own_file(write):  # not the writers, after their write
                pending = next((u for u in self.unwaited if u[2]["writes"].get(read) is entry), None)
                self._race(call, read, write, where, how, pending)
        if ctx and self.peer_writes:
            self._peer_read(call, full, ctx)

    def _own_file(self, write: ast.Call) -> bool:
        """Whether the path ``write`` writes names the rank (``f"cache{rank}.pt"``): each rank that reads the same
        path text reads its own file, which no other rank writes (review79l C2: `if not os.path.exists(path):
        torch.save(x, path)`, then `torch.load(path)`, on a path of each rank's own)."""
        nodes = self.an._changed_paths(write, self.unit)
        return bool(nodes) and self.an.mentions_rank(nodes[0], self.taint, self.laundered, files=False)

    def _peer_write(self, call: ast.Call, ctx: tuple[str, ...], path: str, how: str) -> None:
        """A write to a path of this rank's own in a folder of every rank's (``os.path.join(folder, f"s{rank}")``):
        a reader on one rank that lists the folder or opens another rank's path races with it (review69b M2)."""
        nodes = self.an._changed_paths(call, self.unit)
        split = _split_path(nodes[0], self.once) if nodes else None
        if split is None:
            return
        folder, name = split
        if not self.an.mentions_rank(name, self.taint, self.laundered, files=False):
            return
        if self.an.mentions_rank(folder, self.taint, self.laundered, files=False):
            return  # a folder of each rank's own: nobody else lists it
        own = ast.unparse(_followed(name, self.once))
        pattern = _name_pattern(name, self.once)
        self.peer_writes[path] = _PeerWrite(call, ctx, how, _path_text(folder) or "", own, pattern, frozenset())

    def _peer_read(self, call: ast.Call, full: str, ctx: tuple[str, ...]) -> None:
        """A read under a rank-dependent condition of another rank's file of :meth:`_peer_write`, or a listing of
        their folder, with nothing between that orders every rank's write before it (review69b M2)."""
        listed = _listed(call, full)
        target = None if listed is not None else _read_target(call, full)
        if target is not None and id(call) in self.reported and _read_path(call, full) is None:
            target = None  # a look inside a print or a logger's call decides nothing
        if listed is None and target is None:
            return
        split = _split_path(target, self.once) if target is not None else None
        for path, entry in self.peer_writes.items():
            where, folder = entry.where, entry.folder
            if where and where == ctx[: len(where)]:
                continue  # only the writing ranks, after their own writes
            if any(_names_rank(ctx, root) for root in entry.roots):
                continue  # a gather or reduce to this rank came after every rank's write
            if listed is not None:
                glob_pattern = listed[1]
                if not (_path_text(listed[0]) == folder or (glob_pattern and _inside(listed[0], folder))):
                    continue
            elif split is None or _path_text(split[0]) != folder or not _peer_name(split[1], entry, self.once):
                continue
            pending = next((u for u in self.unwaited if u[2]["peer_writes"].get(path) is entry), None)
            self._peer_race(call, ctx, path, entry, target, pending)
            return

    def _peer_race(
        self,
        read: ast.Call,
        ctx: tuple[str, ...],
        path: str,
        entry: _PeerWrite,
        target: ast.expr | None,
        pending: tuple[str | None, ast.Call, dict] | None,
    ) -> None:
        """The finding of :meth:`_peer_read`: ``target`` is the path read, None for a listing."""
        write, where, how, folder = entry.call, entry.where, entry.how, entry.folder
        cond = ctx[-1]
        line = write.lineno + self.unit.offset
        at = read.lineno + self.unit.offset
        reader = _dotted(read.func) or self.unit.text(read.func)
        writers = "every rank writes" if not where else f"ranks where `{where[-1]}` is true each write"
        if target is None:
            act, does = "listing", f"list `{folder}` here (`{reader}`)"
            outcome = "can list the folder before a slower rank has created its file there, and the list then lacks it"
        else:
            shown = self.unit.text(target)
            if id(read) in self.looks:
                how_look = _dotted(read.func) or f".{_terminal(read.func)}()"
                act, does = "look", f"look for another rank's file here (`{shown}`, {how_look})"
                outcome = (
                    "can look before a slower rank has written it, find no file and go the way a missing file takes"
                )
            else:
                act, does = "read", f"read another rank's file here (`{shown}`)"
                outcome = (
                    "can open it before a slower rank has written it and get FileNotFoundError, or only the part "
                    "written so far"
                )
        between = "with no barrier, collective, store wait or recv between them"
        last = self.last_orderer
        if pending is not None:
            handle, call, _ = pending
            shown_call = f"`{handle} = {self.unit.text(call)}`" if handle else f"`{self.unit.text(call)}`"
            between = (
                f"with only {shown_call} (line {call.lineno + self.unit.offset}) between them, called with "
                f"async_op=True and not waited before this {act} (it orders nothing until its wait() returns)"
            )
        elif last is not None and line < last.lineno + self.unit.offset < at:
            name = _terminal(last.func) or ""
            root = _literal_root(last, name)
            if name in _ROOT_SENDS:
                seen = ", with src=0 on 4 ranks rank 1's write before rank 3's read" if root == 0 else ""
                holds = (
                    f"holds the ranks other than {root} until rank {root} has sent (what torch guarantees is only "
                    f"that rank {root}'s write comes before their reads; gloo's broadcast tree can order more{seen}, "
                    "but that is the backend's algorithm, not a promise)"
                )
            elif name in _ROOT_RECEIVES:
                holds = f"holds only rank {root} until the others have sent, not the reading rank"
            else:  # the wait() of an async collective called before the write
                holds = f"waits for a collective called before line {line} (it orders nothing done after that call)"
            between = f"with only `{self.unit.text(last)}` (line {last.lineno + self.unit.offset}) between them, which {holds}"
        held = "nothing holds the reading rank until the other ranks have written"
        # review87l M1: what can happen, and when; not what always does
        when = (
            "it does when a writer is still writing as the reader gets there (a rank slowed by its data, its disk "
            "or the machine's load), and works when every writer is faster than the reader"
        )
        if last is not None and pending is None and line < last.lineno + self.unit.offset < at:
            if (_terminal(last.func) or "") in _ROOT_SENDS:  # review81l M4: gloo's tree holds the root for some
                held = (
                    # review82l U1: only what holds in general (which late writer rank 0 misses varies by run)
                    "nothing torch promises holds the reading rank until every other rank has written (on gloo a "
                    "broadcast's root may be held by some ranks' writes, never by a promise that covers all)"
                )
                when = (
                    "it does when a writer the broadcast does not hold the reader for is still writing as the reader "
                    "gets there; on 2 ranks gloo's broadcast orders the other rank's write before the read either "
                    "way (the root waits for the rank it sends to, the receiver for the root), so the loss shows "
                    "only on more ranks (barrierlab run, 4 ranks, src=0, one rank sleeping 1 s before its write: "
                    "rank 0's listing lacked rank 3's file when rank 3 was the slow one, and was whole when rank 1 "
                    "or rank 2 was)"
                )
        why = (
            f"{writers} a file of its own into `{folder}` at line {line} (`{path}`, {how}), and ranks where "
            f"`{cond}` is true {does} {between}: {held}, so on gloo it {outcome}: {when}"
        )
        fix = (
            f"put dist.barrier() after the write at line {line} and before this {act}, on every rank (outside the "
            "condition): the reading rank passes it only once every rank has written. On gloo a blocking "
            "all_reduce of a non-empty tensor, or a gather whose dst is the reading rank, orders them too; of a "
            "broadcast torch guarantees only that its root's write comes first"
        )
        self._add(read, "file-race", cond, why, fix)

    def _waits_async(self, call: ast.Call) -> bool:
        """A ``wait()`` of the Work handle of an async collective of the scope (``work.wait()``,
        ``work.get_future().wait()``, ``dist.barrier(async_op=True).wait()``; any ``wait()`` or
        ``torch.futures.wait_all`` when a handle went elsewhere than a plain name): the writes pending when that
        collective was called are ordered from here on. False for any other call."""
        if not self.unwaited:
            return False
        name = _terminal(call.func)
        if name not in ("wait", "wait_all"):
            return False
        inside = {id(n) for n in ast.walk(call)} - {id(call)}
        named = {n.id for n in ast.walk(call) if isinstance(n, ast.Name)}
        waited = [
            entry
            for entry in self.unwaited
            if entry[0] != "" and (id(entry[1]) in inside or entry[0] is None or entry[0] in named)
        ]
        if not waited:
            return False
        for entry in waited:
            self.unwaited.remove(entry)
            for field_name, table in (
                ("writes", self.writes),
                ("folders", self.folders),
                ("removals", self.removals),
                ("peer_writes", self.peer_writes),
            ):
                for path, value in entry[2][field_name].items():
                    if table.get(path) is value:
                        del table[path]
            for path, found in entry[2]["reads"].items():
                left = [r for r in self.reads.get(path, []) if not any(r is f for f in found)]
                if left:
                    self.reads[path] = left
                else:
                    self.reads.pop(path, None)
            self.last_orderer = call
        return True

    def _removal(self, call: ast.Call, ctx: tuple[str, ...], path: str, how: str, folder: bool) -> None:
        """A file (or folder) removed under a rank-dependent condition after other ranks read it (or a path inside
        it) with nothing between that orders their read before the removal (review64b M5; the run-time check is
        :mod:`barrierlab.ordering`'s, whose advice is :data:`barrierlab.ordering.ORDERERS_BEFORE_REMOVAL`)."""
        for read_path, found in list(self.reads.items()):
            if not (read_path == path or (folder and _inside_text(read_path, path))):
                continue
            others = [
                (read, where) for read, where in found if not _implied(ctx, where) and not self._own_look(read, ctx)
            ]
            if others:
                self._removal_race(call, ctx, path, how, read_path, others[-1][0])
                return

    def _read_after_removal(self, read: ast.Call, ctx: tuple[str, ...], read_path: str) -> None:
        """A read by other ranks after a removal under a condition on the rank, with nothing between that orders
        (review67b M2: ``if rank == 0: os.remove(p)`` / ``else: torch.load(p)``, the two branches of one test):
        the removing rank does not wait for the readers, so the removal can come first."""
        for path, (removal, where, how, folder) in list(self.removals.items()):
            if not (read_path == path or (folder and _inside_text(read_path, path))) or _implied(where, ctx):
                continue
            del self.removals[path]
            if id(removal) in self.an.found:
                continue
            cond = where[-1]
            line = read.lineno + self.unit.offset
            reader = _dotted(read.func) or self.unit.text(read.func)
            inner = f" `{read_path}`, a path inside it," if read_path != path else " it"
            branch = ctx[:-1] == where[:-1] and ctx[-1:] == (f"not ({cond})",)
            place = "in the else branch of the same test" if branch else "later in the program"
            verb, fails = "read", "gets FileNotFoundError"
            if id(read) in self.looks:
                verb, fails = "look for", "finds no file and goes the way a missing file takes"
            why = (
                f"ranks where `{cond}` is true remove `{path}` here ({how}), and the other ranks {verb}{inner} at line "
                f"{line} (`{reader}`), {place}, with no barrier, collective, store wait or recv between this removal "
                "and that read: nothing holds the removing rank back until the others have read, so on gloo it removes "
                f"the file while they are still on their way to line {line}, and a rank that gets there after the "
                f"removal {fails} (it works only when every reader is faster than the remover)"
            )
            fix = (
                f"let every rank read first: do the read at line {line}, then dist.barrier() outside the condition, "
                f"then the removal under `{cond}` (a blocking all_reduce of a non-empty tensor on gloo, a store key "
                "or send/recv after the other ranks' use of the file orders them too)"
            )
            self._add(removal, "file-race", cond, why, fix)

    def _own_look(self, read: ast.Call, ctx: tuple[str, ...]) -> bool:
        """Whether ``read`` is a look in the test of an if around the removal whose conditions ``ctx`` adds nothing
        to that if's own beyond the test (round37's ``if rank == 0: ... if os.path.exists(stale): os.unlink(stale)``,
        round28's ``if rank == 0 and os.path.exists(p): os.remove(p)``): the look decides only whether the looking
        rank removes the file, and a rank where the rest of the test is false does nothing either way."""
        if id(read) not in self.looks:
            return False
        for calls, outer, text in self.guards:
            if id(read) in calls:
                extra = ctx[len(outer) :] if ctx[: len(outer)] == outer else None
                return extra is not None and all(c in (text, f"not ({text})") for c in extra)
        return False

    def _removal_race(
        self, call: ast.Call, ctx: tuple[str, ...], path: str, how: str, read_path: str, read: ast.Call
    ) -> None:
        cond = ctx[-1]
        line = read.lineno + self.unit.offset
        reader = _dotted(read.func) or self.unit.text(read.func)
        inner = f" `{read_path}`, a path inside it," if read_path != path else ""
        opens, verb = "a rank that opens it after that gets FileNotFoundError", "read"
        if id(read) in self.looks:
            verb = "look for"
            opens = f"a rank that looks after that (`{reader}`) finds no file and goes the way a missing file takes"
        before = ""
        if self.last_orderer is not None and self.last_orderer.lineno < read.lineno:
            shown = self.unit.text(self.last_orderer)
            before = f" (the last call that orders, `{shown}` at line {self.last_orderer.lineno + self.unit.offset}, comes before the read)"
        why = (
            f"ranks where `{cond}` is true remove `{path}` here ({how}), and other ranks {verb}{inner or ' it'} at line {line} "
            f"(`{reader}`) with no barrier, collective, store wait or recv between that read and this removal"
            f"{before}: nothing holds the removing rank back until the others have read, so on gloo it removes the "
            f"file as soon as its own work is done, and {opens} (it works only when every reader is faster than the "
            "remover)"
        )
        fix = (
            f"put dist.barrier() after the read at line {line} and before this removal, outside the condition: a "
            "barrier, a blocking all_reduce of a non-empty tensor on gloo, a store key or send/recv after the other "
            "ranks' use of the file is over (the file closed) and before the removal orders them"
        )
        self._add(call, "file-race", cond, why, fix)

    def _orders(self, call: ast.Call) -> bool:
        """A call that can order one rank's earlier write before another rank's later read: a collective, a
        function that reaches one, a point-to-point call, a store wait/get, or a callback lint cannot see
        into (a parameter of the function: ``wait()``), which gets the benefit of the doubt."""
        found = self.an.classify(call, self.unit, self.self_class, self.scope)
        if found is not None and (found.kind == "coll" or found.target in self.an.reach):
            return True
        full = self.an._resolve(call.func, self.unit) if _dotted(call.func) else ""
        if full.startswith("torch.distributed.") and full.rpartition(".")[2] in POINT_TO_POINT:
            return True
        if isinstance(call.func, ast.Name) and call.func.id in self.params:
            return True
        return (
            isinstance(call.func, ast.Attribute)
            and call.func.attr in ("wait", "get")
            and "store" in (_dotted(call.func.value) or "").lower()
        )

    def _p2p(self, kind: str, call: ast.Call, ctx: tuple[str, ...]) -> None:
        if ctx or self.conditional:  # `if not is_first_stage: recv(...)` may be a rank test by another name
            return
        if self.scope is not None and self.an.called_only_under_rank_test(self.scope):
            return  # a pipeline stage's function (round 17: `run_stage0` sends first, `run_stage1` receives first)
        if self.first_p2p is None:
            self.first_p2p = (kind, call)
            return
        first_kind, first = self.first_p2p
        if first_kind == kind or id(first) in self.an.found:
            return
        line = call.lineno + self.unit.offset
        if first_kind == "send":
            why = (
                f"every rank makes this blocking send before its recv at line {line}, under no if or while: "
                "on gloo a send returns only once the peer has posted its receive (the ops table's measured "
                "column), so each rank waits for a peer that is itself waiting in its send until the timeout"
            )
        else:
            why = (
                f"every rank makes this blocking recv before its send at line {line}, under no if or while: "
                "each rank waits for a message its peer sends only after its own recv returns"
            )
        fix = (
            "post both sides without waiting (dist.isend and dist.irecv, then wait() on both, or "
            "dist.batch_isend_irecv), or order them by rank (even ranks send first, odd ranks receive first)"
        )
        self._add(first, "p2p-order", "every rank", why, fix)

    def _race(
        self,
        read: ast.Call,
        path: str,
        write: ast.Call,
        where: tuple[str, ...],
        how: str,
        pending: tuple[str | None, ast.Call, dict] | None = None,
    ) -> None:
        cond = where[-1]
        line = write.lineno + self.unit.offset
        reads, finds = "read it here", "read a missing or half-written file"
        if id(read) in self.looks:
            looked = _dotted(read.func) or self.unit.text(read.func)
            reads = f"look for it here (`{looked}`)"
            finds = "get False from its look and go the way a missing file takes"
        if pending is not None:  # review64b M2: an async_op=True collective between, not waited before the read
            handle, call, _ = pending
            name = _terminal(call.func)
            at = call.lineno + self.unit.offset
            shown = f"`{handle} = {self.unit.text(call)}`" if handle else f"`{self.unit.text(call)}`"
            waited = f"`{handle}.wait()`" if handle else "wait() on its handle"
            if handle == "":
                waiting = " and its Work handle is dropped on that line, so it orders nothing: nothing waits for it"
                fix = f"keep the handle (`work = {self.unit.text(call)}`) and call `work.wait()`"
            else:
                waiting = (
                    f": it returns its Work handle at once and orders nothing until {waited} returns, and none comes"
                )
                fix = f"call {waited}"
            why = (
                f"ranks where `{cond}` is true write `{path}` at line {line} ({how}), and other ranks {reads}; "
                f"the {name} between them, {shown} at line {at}, is called with async_op=True{waiting} before "
                f"this read. On gloo the other ranks pass line {at} without waiting for the writer, so a rank can "
                f"{finds} (it works only when the writer is faster)"
            )
            fix += (
                f" after line {at} and before this read, on every rank (or make the {name} blocking: drop "
                "async_op=True)"
            )
            self._add(read, "file-race", cond, why, fix)
            return
        between = "with no barrier, collective, store wait or recv between them"
        last = self.last_orderer
        if last is not None and line < last.lineno + self.unit.offset < read.lineno + self.unit.offset:
            # review65b M5: a broadcast from another root between them holds the readers, not for this writer
            holds = (
                f"holds the other ranks until rank {_literal_root(last, _terminal(last.func) or '')} has sent"
                if _terminal(last.func) in _ROOT_SENDS
                else f"holds only rank {_literal_root(last, _terminal(last.func) or '')}, until the others have sent"
            )
            between = (
                f"with only `{self.unit.text(last)}` (line {last.lineno + self.unit.offset}) between them, which "
                f"{holds}, not the readers until the writer has written"
            )
        why = (
            f"ranks where `{cond}` is true write `{path}` at line {line} ({how}), and other ranks {reads} "
            f"{between}: nothing orders the write before the "
            f"read, so a rank can {finds} (it works only when the writer is faster)"
        )
        fix = (
            f"put dist.barrier() (on gloo a blocking all_reduce of a non-empty tensor orders as well) after the "
            f"write at line {line} "
            "and before this read, outside the condition"
        )
        self._add(read, "file-race", cond, why, fix)

    def _folder_race(self, mkdir: ast.Call, folder: str, use: ast.Call, where: tuple[str, ...]) -> None:
        cond = where[-1]
        line = use.lineno + self.unit.offset
        used = _dotted(use.func) or self.unit.text(use.func)
        why = (
            f"only ranks where `{cond}` is true create the folder `{folder}` here, and the other ranks use a path "
            f"inside it at line {line} (`{used}`) with no barrier, collective, store wait or recv between them: "
            "nothing orders the folder before their use, so a rank that gets there first fails with 'No such file "
            "or directory' (it works only when the creating rank is faster)"
        )
        fix = (
            f"create the folder on every rank (os.makedirs({folder}, exist_ok=True) outside the condition), or put "
            f"dist.barrier() after this line and before line {line}, outside the condition"
        )
        self._add(mkdir, "file-race", cond, why, fix)

    def _add(self, node: ast.Call, kind: str, cond: str, why: str, fix: str) -> None:
        if id(node) in self.an.found:
            return
        finding = Finding(
            path=self.an.path,
            line=node.lineno + self.unit.offset,
            col=node.col_offset + self.unit.indent + 1,
            collective=_dotted(node.func) or self.unit.text(node.func),
            condition=cond,
            kind=kind,
            why=why,
            fix=fix,
            cell=self.unit.cell,
        )
        self.an.found[id(node)] = (kind, finding)


def _removed_path(call: ast.Call, full: str) -> tuple[str, str, bool] | None:
    """(path, how, whether it is a folder) when ``call`` removes a file (``os.remove``, ``os.unlink``,
    ``Path(p).unlink()``) or a folder with what is inside it (``shutil.rmtree``)."""
    if full in ("os.remove", "os.unlink"):
        text = _path_text(_argument(call, 0, "path"))
        return (text, full, False) if text else None
    if full == "shutil.rmtree":
        text = _path_text(_argument(call, 0, "path"))
        return (text, full, True) if text else None
    if isinstance(call.func, ast.Attribute) and call.func.attr == "unlink" and not full.startswith("os."):
        text = _path_text(call.func.value)
        return (text, ".unlink()", False) if text else None
    return None


def _inside_text(path: str, folder: str) -> bool:
    """:func:`_inside` for a path given as its text."""
    try:
        node = ast.parse(path, mode="eval").body
    except SyntaxError:
        return False
    return _inside(node, folder)


#: Collectives whose first argument is the tensor (or list of tensors) they write: what a use before the wait of
#: their Work handle may read unwritten (:meth:`_Agreement._read_before_wait`).
_WRITES_FIRST_ARGUMENT = frozenset(
    (
        "all_reduce",
        "broadcast",
        "reduce",
        "all_gather",
        "all_gather_into_tensor",
        "reduce_scatter",
        "reduce_scatter_tensor",
        "all_to_all",
        "all_to_all_single",
        "scatter",
    )
)
#: What may be asked of a tensor an async collective is still writing: its metadata, not its values.
_METADATA = frozenset(("shape", "dtype", "device", "size", "numel", "dim", "ndim", "is_cuda", "requires_grad"))


def _bare_use(statement: ast.stmt, name: str) -> ast.Name | None:
    """The first load of ``name`` in ``statement`` that may read its values (not ``name.shape``, ``name.size()``,
    ``len(name)``, ...)."""
    meta: set[int] = set()
    for n in ast.walk(statement):
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.attr in _METADATA:
            meta.add(id(n.value))
        elif (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Name)
            and n.func.id == "len"
            and n.args
            and isinstance(n.args[0], ast.Name)
        ):
            meta.add(id(n.args[0]))
    found = [
        n
        for n in ast.walk(statement)
        if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) and id(n) not in meta
    ]
    return min(found, key=lambda n: (n.lineno, n.col_offset)) if found else None


def _holding_block(statement: ast.stmt, nodes: list[ast.AST]) -> list[ast.stmt] | None:
    """The list of statements (a body, an else, a finally, or the scope's own top level) that holds ``statement``."""
    nested: set[int] = set()
    for n in nodes:
        for part in ("body", "orelse", "finalbody"):
            body = getattr(n, part, None)
            if isinstance(body, list):
                nested.update(id(st) for st in body)
                if any(st is statement for st in body):
                    return body
    top = sorted(
        (n for n in nodes if isinstance(n, ast.stmt) and id(n) not in nested), key=lambda n: (n.lineno, n.col_offset)
    )
    return top if any(st is statement for st in top) else None


def _async_op(call: ast.Call) -> bool:
    """``async_op=True`` given as a constant: the call returns a Work handle at once."""
    flag = next((k.value for k in call.keywords if k.arg == "async_op"), None)
    return isinstance(flag, ast.Constant) and flag.value is True


_BLOCKING_P2P = {"send": "send", "send_object_list": "send", "recv": "recv", "recv_object_list": "recv"}
_WRITE_MODES = re.compile(r"[wax+]")


def _implied(where: tuple[str, ...], ctx: tuple[str, ...]) -> bool:
    """Whether the conditions ``ctx`` (texts, outermost first) hold only where ``where``'s do: ``where`` is a prefix
    of ``ctx``, or each of its conditions is one of ``ctx``'s or a conjunct of one (``step % 5 == 0 and
    master_process`` under ``master_process``: nanoGPT's checkpoint into the folder rank 0 made, attack23 a06)."""
    if where == ctx[: len(where)]:
        return True
    conjuncts = {part.strip() for text in ctx for part in text.split(" and ")}
    return all(cond in ctx or cond in conjuncts for cond in where)


def _path_text(node: ast.expr | None) -> str | None:
    if node is None:
        return None
    if isinstance(node, ast.Call) and _terminal(node.func) in ("Path", "PurePath") and len(node.args) == 1:
        node = node.args[0]  # Path(p) names the same file as p
    return ast.unparse(node)


def _argument(call: ast.Call, index: int, *names: str) -> ast.expr | None:
    if len(call.args) > index:
        return call.args[index]
    return next((k.value for k in call.keywords if k.arg in names), None)


def _open_mode(call: ast.Call) -> str:
    mode = _argument(call, 1, "mode")
    return mode.value if isinstance(mode, ast.Constant) and isinstance(mode.value, str) else "r"


def _written_path(call: ast.Call, full: str) -> tuple[str, str] | None:
    """(path, how) when ``call`` creates or replaces a file."""
    name = _terminal(call.func)
    if full in ("torch.save", "numpy.save", "np.save"):
        path = _argument(call, 1, "f") if full == "torch.save" else _argument(call, 0, "file")
        text = _path_text(path)
        return (text, f"{full}") if text else None
    if full in ("open", "io.open") and _WRITE_MODES.search(_open_mode(call)):
        text = _path_text(_argument(call, 0, "file"))
        return (text, "open for writing") if text else None
    if full in ("os.replace", "os.rename", "shutil.move", "shutil.copy", "shutil.copyfile", "shutil.copy2"):
        text = _path_text(_argument(call, 1, "dst"))
        return (text, full) if text else None
    if isinstance(call.func, ast.Attribute) and name in ("write_text", "write_bytes"):
        return (_path_text(call.func.value) or "", f".{name}()")
    return None


def _made_folder(call: ast.Call, full: str) -> str | None:
    """The folder a call creates (``os.makedirs(p)``, ``os.mkdir(p)``, ``Path(p).mkdir()``)."""
    if full in ("os.makedirs", "os.mkdir"):
        return _path_text(_argument(call, 0, "name", "path"))
    if isinstance(call.func, ast.Attribute) and call.func.attr == "mkdir" and not full.startswith("os."):
        return _path_text(call.func.value)
    return None


_FOLDER_READERS = frozenset({"os.listdir", "os.scandir", "os.walk", "glob.glob", "shutil.rmtree"})


def _used_paths(call: ast.Call, full: str) -> list[ast.expr]:
    """The path arguments of a call that writes, reads or lists files (``torch.save(x, path)``, ``open(path)``,
    ``os.listdir(folder)``, ``Path(p).write_text()``)."""
    name = _terminal(call.func)
    if full in ("torch.save",):
        found = [_argument(call, 1, "f")]
    elif full in ("numpy.save", "np.save", "torch.load", "numpy.load", "np.load", "open", "io.open"):
        found = [_argument(call, 0, "f", "file")]
    elif full in ("os.replace", "os.rename", "shutil.move", "shutil.copy", "shutil.copyfile", "shutil.copy2"):
        found = [_argument(call, 1, "dst")]
    elif full in _FOLDER_READERS:
        found = [_argument(call, 0, "path", "pathname", "top")]
    elif isinstance(call.func, ast.Attribute) and name in ("write_text", "write_bytes", "read_text", "read_bytes"):
        found = [call.func.value]
    else:
        return []
    return [p for p in found if p is not None]


def _inside(path: ast.expr, folder: str) -> bool:
    """Whether ``path`` names ``folder`` or a path built on it (``os.path.join(folder, ...)``, ``folder / "x"``,
    ``f"{folder}/x"``, ``Path(folder)``), by text."""
    return any(
        isinstance(node, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)) and ast.unparse(node) == folder
        for node in ast.walk(path)
    )


_LOOKS = frozenset({"os.path.exists", "os.path.isfile", "os.path.isdir", "os.path.lexists", "os.path.getsize"})
_PATH_LOOKS = frozenset({"exists", "is_file", "is_dir"})


def _looked_path(call: ast.Call, full: str) -> str | None:
    """The path whose state a call asks about (``os.path.exists(p)``, ``os.path.getsize(p)``, ``Path(p).is_file()``):
    a read of the file's state, whose answer depends on whether the writer has got there."""
    if full in _LOOKS:
        return _path_text(_argument(call, 0, "path"))
    if (
        isinstance(call.func, ast.Attribute)
        and call.func.attr in _PATH_LOOKS
        and not call.args
        and not full.startswith("os.")
    ):
        return _path_text(call.func.value)
    return None


def _read_path(call: ast.Call, full: str) -> str | None:
    """The path a call reads."""
    name = _terminal(call.func)
    if full in ("torch.load", "numpy.load", "np.load"):
        return _path_text(_argument(call, 0, "f", "file"))
    if full in ("open", "io.open") and not _WRITE_MODES.search(_open_mode(call)):
        return _path_text(_argument(call, 0, "file"))
    if isinstance(call.func, ast.Attribute) and name in ("read_text", "read_bytes"):
        return _path_text(call.func.value)
    return None


_LISTERS = frozenset({"os.listdir", "os.scandir", "os.walk", "glob.glob", "glob.iglob"})


def _listed(call: ast.Call, full: str) -> tuple[ast.expr, bool] | None:
    """(the folder or pattern, whether a glob pattern) a call lists (``os.listdir(folder)``,
    ``glob.glob(os.path.join(folder, "*"))``, ``Path(folder).iterdir()``/``.glob("*")``)."""
    if full in _LISTERS:
        node = _argument(call, 0, "path", "pathname", "top")
        return (node, full.startswith("glob.")) if node is not None else None
    if (
        isinstance(call.func, ast.Attribute)
        and call.func.attr in ("iterdir", "glob", "rglob")
        and not full.startswith(("os.", "glob."))
    ):
        return call.func.value, False
    return None


def _read_target(call: ast.Call, full: str) -> ast.expr | None:
    """The path expression a call reads or looks at (see :func:`_read_path` and :func:`_looked_path`)."""
    full = full or (_dotted(call.func) or "")
    name = _terminal(call.func)
    if full in ("torch.load", "numpy.load", "np.load"):
        return _argument(call, 0, "f", "file")
    if full in ("open", "io.open") and not _WRITE_MODES.search(_open_mode(call)):
        return _argument(call, 0, "file")
    if full in _LOOKS:
        return _argument(call, 0, "path")
    if isinstance(call.func, ast.Attribute) and not full.startswith("os."):
        if name in ("read_text", "read_bytes") or (name in _PATH_LOOKS and not call.args):
            return call.func.value
    return None


def _split_path(node: ast.expr, once: dict[str, ast.expr], depth: int = 0) -> tuple[ast.expr, ast.expr] | None:
    """(folder, file name) of a path built from its folder: ``os.path.join(folder, name)``, ``Path(folder) /
    name``, ``f"{folder}/s{rank}"``; names assigned once in the scope are followed."""
    if depth > 4:
        return None
    if isinstance(node, ast.Name) and node.id in once:
        return _split_path(once[node.id], once, depth + 1)
    if isinstance(node, ast.Call) and _terminal(node.func) in ("Path", "PurePath", "str") and len(node.args) == 1:
        return _split_path(node.args[0], once, depth + 1)
    if isinstance(node, ast.Call) and _terminal(node.func) in ("Path", "PurePath") and len(node.args) >= 2:
        if any(isinstance(a, ast.Starred) for a in node.args) or node.keywords:
            return None
        folder = node.args[0] if len(node.args) == 2 else ast.Call(func=node.func, args=node.args[:-1], keywords=[])
        return folder, node.args[-1]
    if isinstance(node, ast.Call) and (_dotted(node.func) or "").endswith("path.join") and len(node.args) >= 2:
        if any(isinstance(a, ast.Starred) for a in node.args) or node.keywords:
            return None
        folder = node.args[0] if len(node.args) == 2 else ast.Call(func=node.func, args=node.args[:-1], keywords=[])
        return folder, node.args[-1]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        return node.left, node.right
    if isinstance(node, ast.JoinedStr):
        parts = node.values
        for index in range(len(parts) - 1, 0, -1):
            part = parts[index]
            if isinstance(part, ast.Constant) and isinstance(part.value, str) and "/" in part.value:
                head, _, tail = part.value.rpartition("/")
                before = [*parts[:index], *([ast.Constant(head)] if head else [])]
                only = before[0] if len(before) == 1 else None
                if isinstance(only, ast.FormattedValue) and only.conversion == -1 and only.format_spec is None:
                    folder: ast.expr = only.value
                else:
                    folder = ast.JoinedStr(values=before)
                return folder, ast.JoinedStr(values=[*([ast.Constant(tail)] if tail else []), *parts[index + 1 :]])
    return None


def _name_pattern(node: ast.expr, once: dict[str, ast.expr], depth: int = 0) -> str:
    """A regular expression for the file names ``node`` can make: its constant parts, ``.*`` for the rest
    (``f"s{rank}.pt"`` -> ``s.*\\.pt``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return re.escape(node.value)
    if isinstance(node, ast.Name) and node.id in once and depth < 4:
        return _name_pattern(once[node.id], once, depth + 1)
    if isinstance(node, ast.JoinedStr):
        out = "".join(_name_pattern(v, once, depth + 1) if isinstance(v, ast.Constant) else ".*" for v in node.values)
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        out = _name_pattern(node.left, once, depth + 1) + _name_pattern(node.right, once, depth + 1)
    else:
        out = ".*"
    return re.sub(r"(\.\*)+", ".*", out)


class _PeerWrite(NamedTuple):
    """A write of :meth:`_Order._peer_write`: each rank's own file in a folder of every rank's."""

    call: ast.Call
    where: tuple[str, ...]  # its conditions on the rank
    how: str
    folder: str  # the folder's text
    name: str  # the file name's text (names assigned once followed)
    pattern: str  # :func:`_name_pattern` of the file name
    roots: frozenset[int]  # roots of gathers/reduces since: ordered for a reader on one of them


def _followed(node: ast.expr, once: dict[str, ast.expr]) -> ast.expr:
    """``node``, or what the name assigned once in the scope stands for."""
    for _ in range(4):
        if not (isinstance(node, ast.Name) and node.id in once):
            break
        node = once[node.id]
    return node


def _peer_name(name: ast.expr, entry: _PeerWrite, once: dict[str, ast.expr]) -> bool:
    """Whether the file name ``name`` is another rank's of the write ``entry``: not the same expression (each
    rank's own), and a name the write's pattern makes (``"s3"``, ``f"s{r}"`` for ``f"s{rank}"``)."""
    pattern = entry.pattern
    name = _followed(name, once)
    if ast.unparse(name) == entry.name:
        return False
    if isinstance(name, ast.Constant) and isinstance(name.value, str):
        return bool(re.fullmatch(pattern, name.value)) and (pattern != ".*" or name.value.isdigit())
    return _name_pattern(name, once) == pattern


# --------------------------------------------------------------------------- sizes and counts from data

#: torch calls whose result has as many elements as its data says (``bincount``: max + 1, unless ``minlength``).
_VALUE_SIZED = frozenset({"bincount", "unique", "unique_consecutive", "nonzero", "argwhere", "masked_select"})
#: Calls and methods whose result has as many elements as their (first) argument or receiver.
_SIZE_KEEPING = frozenset(
    {
        "sorted",
        "list",
        "tuple",
        "set",
        "reversed",
        "enumerate",
        "iter",
        "dict",
        "keys",
        "values",
        "items",
        "stack",
        "cat",
        "concat",
        "concatenate",
        "hstack",
        "vstack",
        "tensor",
        "as_tensor",
        "Tensor",
        "FloatTensor",
        "LongTensor",
        "array",
        "asarray",
        "float",
        "long",
        "int",
        "double",
        "half",
        "bool",
        "to",
        "cuda",
        "cpu",
        "clone",
        "detach",
        "contiguous",
        "flatten",
        "tolist",
        "numpy",
        "copy",
        "type",
        "abs",
        "neg",
        "sqrt",
    }
)
#: torch.distributed collectives whose tensors must have the same size on every rank.
_SIZED_COLLECTIVES = frozenset(
    {
        "all_reduce",
        "reduce",
        "broadcast",
        "all_gather",
        "all_gather_into_tensor",
        "reduce_scatter",
        "reduce_scatter_tensor",
        "all_to_all_single",
        "_all_gather_base",
        "_reduce_scatter_base",
    }
)
#: Framework calls (framework, name) that hand their tensor argument to a collective whose tensors must have one
#: size on every rank: Accelerate's ``gather``/``gather_for_metrics`` all-gather it as it is (padding is
#: ``pad_across_processes``'s job), its ``reduce`` all-reduces it; Lightning's and mmengine's ``all_gather`` and
#: ``all_reduce`` are torch's.
_SAME_SHAPE_FRAMEWORK = frozenset(
    {
        ("Accelerate", "gather"),
        ("Accelerate", "gather_for_metrics"),
        ("Accelerate", "reduce"),
        ("Lightning", "all_gather"),
        ("Lightning", "all_reduce"),
        ("Lightning", "reduce"),
        ("mmengine", "all_gather"),
        ("mmengine", "all_reduce"),
    }
)
#: Framework calls that make one collective per key of a dict argument: (name, keyword that switches it on).
_PER_KEY_CALLS = {"log_dict": "sync_dist"}


def _boolean_mask(index: ast.expr) -> bool:
    """Whether a subscript's index is evidently a boolean mask (``x[mask.bool()]``, ``x[ids != pad]``,
    ``x[~done]``), whose result has as many elements as the mask has true values."""
    if isinstance(index, ast.Compare):
        return True
    if isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.Invert):
        return True
    return isinstance(index, ast.Call) and isinstance(index.func, ast.Attribute) and index.func.attr == "bool"


def _whole(index: ast.expr) -> bool:
    """Whether a subscript's index keeps the whole first dimension (``x[:]``, ``x[:, 0]``, ``x[..., 1]``)."""
    first = index.elts[0] if isinstance(index, ast.Tuple) and index.elts else index
    if isinstance(first, ast.Constant) and first.value is Ellipsis:
        return True
    return isinstance(first, ast.Slice) and first.lower is None and first.upper is None and first.step is None


class _Sizes:
    """Sizes and counts that come from the data, not from the rank: a tensor handed to an all_reduce (or
    broadcast, all_gather...) whose number of elements depends on the values of a rank's data
    (``torch.bincount(labels)`` without ``minlength``, ``unique``, ``nonzero``) or on the keys of a dict filled
    from data (a loss dict that gets a key only ``if "dn_boxes" in outputs``), stacked into one tensor; and one
    collective per key of such a dict (a loop over it, Lightning's ``self.log_dict(d, sync_dist=True)``).

    A dict is filled from data when a key is added (``d[k] = v``, ``d.update``/``setdefault``/``pop``,
    ``del d[k]``) under an ``if`` whose test reads the function's parameters (or values computed from them),
    or in a loop over a value-sized result (``for k in y.unique().tolist()``); a function that returns such a
    dict passes the property to the names assigned from it and to the parameters they are handed to. Keys
    gathered from every rank first (``all_gather_object`` of the key sets, their union) are the same
    everywhere and are not followed."""

    def __init__(self, an: _Analysis) -> None:
        self.an = an
        self.keyed: dict[str | None, dict[str, str]] = {}  # scope -> dict name -> how its keys come from data
        self.keyed_funcs: dict[str, str] = {}

    def run(self) -> None:
        scopes = self.an._scopes()
        for key, nodes, _ in scopes:
            self.keyed[key] = self._own_keyed(key, nodes)
        for func in self.an.table.values():
            mine = self.keyed.get(func.key, {})
            for node in _own_nodes(func.node.body):
                if isinstance(node, ast.Return) and isinstance(node.value, ast.Name) and node.value.id in mine:
                    self.keyed_funcs.setdefault(func.node.name, mine[node.value.id])
        for _ in range(5):
            changed = False
            for key, nodes, unit in scopes:
                mine = self.keyed.setdefault(key, {})
                for names, value, index in _assignments(nodes):
                    how = self._keyed_value(value, mine) if index is None else None
                    for name in names:
                        if how and name not in mine:
                            mine[name], changed = how, True
                self_class = self.an._class_of(key)
                for node in nodes:
                    if not isinstance(node, ast.Call):
                        continue
                    callee = self.an._callee(node.func, self_class, unit)
                    if callee is None:
                        continue
                    params = [a.arg for a in self.an.table[callee].node.args.args]
                    skip = 1 if params[:1] in (["self"], ["cls"]) else 0
                    bound = list(zip(params[skip:], node.args)) + [(k.arg, k.value) for k in node.keywords if k.arg]
                    for param, arg in bound:
                        how = self._keyed_value(arg, mine)
                        theirs = self.keyed.setdefault(callee, {})
                        if how and param in params and param not in theirs:
                            theirs[param], changed = how, True
            if not changed:
                break
        for key, nodes, unit in scopes:
            if unit.report and (key is None or self.an.table[key].unit.report):
                self._check(key, nodes, unit)

    def _keyed_value(self, value: ast.expr, mine: dict[str, str]) -> str | None:
        if isinstance(value, ast.Name) and value.id in mine:
            return mine[value.id]
        if isinstance(value, ast.Call):
            name = _terminal(value.func)
            if isinstance(value.func, ast.Name) and name in self.keyed_funcs:
                return self.keyed_funcs[name]
            if name in ("dict", "copy") and isinstance(value.func, ast.Name) and value.args:
                return self._keyed_value(value.args[0], mine)
            if name == "copy" and isinstance(value.func, ast.Attribute):
                return self._keyed_value(value.func.value, mine)
        return None

    def _own_keyed(self, key: str | None, nodes: list[ast.AST]) -> dict[str, str]:
        """Dicts of the scope that get keys under a test on the data or in a loop over a value-sized result."""
        func = self.an.table.get(key) if key is not None else None
        if func is None:
            return {}
        unit = func.unit
        args = func.node.args
        data = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)} - {"self", "cls"}
        data = _closure(
            _assignments(nodes) + _loop_targets(nodes),
            data,
            lambda value, _, names: any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(value)),
        )
        found: dict[str, str] = {}
        memo: dict[int, set[str]] = {}

        def keyed(node: ast.If | ast.For | ast.AsyncFor) -> set[str]:
            """``_keyed_names`` of the node's body and else, an elif chain's rest worked out once (attack28 a10:
            each branch of a 1,000-branch chain walked every branch after it)."""
            if id(node) not in memo:
                rest = node.orelse
                if isinstance(node, ast.If) and len(rest) == 1 and isinstance(rest[0], ast.If):
                    test = [ast.Expr(value=rest[0].test)]  # the elif's own test (``elif d.pop(k):``)
                    memo[id(node)] = _keyed_names(node.body) | _keyed_names(test) | keyed(rest[0])
                else:
                    memo[id(node)] = _keyed_names(node.body + rest)
            return memo[id(node)]

        for node in nodes:
            if isinstance(node, ast.If):
                reads = any(isinstance(n, ast.Name) and n.id in data for n in ast.walk(node.test))
                if not reads:
                    continue
                how = f"a key is added under `if {unit.text(node.test)}` (line {node.lineno + unit.offset})"
            elif isinstance(node, (ast.For, ast.AsyncFor)) and self._sized(node.iter, set(), {}):
                how = (
                    f"a key is added per item of `{unit.text(node.iter)}` (line {node.lineno + unit.offset}), "
                    "whose length comes from the values of the data"
                )
            else:
                continue
            for name in keyed(node):
                found.setdefault(name, how)
        if found:  # a list or tensor gets no key from ``t[rank] = 1``: only a dict grows that way (round 42 sglang)
            values: dict[str, list[ast.expr]] = {}
            for names, value, index in _assignments(nodes):
                for name in names:
                    values.setdefault(name, []).append(value if index is None else ast.Dict(keys=[], values=[]))
            for name in [n for n in found if values.get(n) and all(_not_a_dict(v) for v in values[n])]:
                del found[name]
        return found

    def _sized(self, expr: ast.AST, sized: set[str], keyed: dict[str, str]) -> bool:
        """Whether the number of elements of ``expr`` comes from the data's values or a data-keyed dict."""
        if isinstance(expr, ast.Name):
            return expr.id in sized or expr.id in keyed
        if isinstance(expr, ast.Call):
            name = _terminal(expr.func)
            if name in _VALUE_SIZED and not any(k.arg == "minlength" for k in expr.keywords):
                return not (name == "bincount" and len(expr.args) > 2)
            if name in _SIZE_KEEPING:
                if isinstance(expr.func, ast.Attribute) and self._sized(expr.func.value, sized, keyed):
                    return True
                return bool(expr.args) and self._sized(expr.args[0], sized, keyed)
            return False
        if isinstance(expr, (ast.ListComp, ast.GeneratorExp, ast.SetComp, ast.DictComp)):
            return any(self._sized(g.iter, sized, keyed) for g in expr.generators)
        if isinstance(expr, ast.Subscript):
            return _boolean_mask(expr.slice) or self._sized(expr.value, sized, keyed) and _whole(expr.slice)
        if isinstance(expr, ast.BinOp):
            return self._sized(expr.left, sized, keyed) or self._sized(expr.right, sized, keyed)
        if isinstance(expr, (ast.List, ast.Tuple)):
            return any(isinstance(e, ast.Starred) and self._sized(e.value, sized, keyed) for e in expr.elts)
        return False

    def _root(
        self, expr: ast.AST, pairs: dict[str, ast.expr], keyed: dict[str, str], unit: _Unit, depth: int = 0
    ) -> str:
        """Where the size of ``expr`` comes from, in words."""
        for node in ast.walk(expr):
            if isinstance(node, ast.Name) and node.id in keyed:
                return f"the keys of `{node.id}`, a dict filled from the data ({keyed[node.id]})"
            if isinstance(node, ast.Call) and _terminal(node.func) in _VALUE_SIZED:
                return (
                    f"`{unit.text(node)}` (line {node.lineno + unit.offset}), whose length depends on the values of "
                    "each rank's data"
                )
            if isinstance(node, ast.Subscript) and _boolean_mask(node.slice):
                return (
                    f"`{unit.text(node)}` (line {node.lineno + unit.offset}), indexed with a boolean mask: it keeps "
                    "as many elements as the mask has true values in each rank's data"
                )
        if depth < _MAX_DEPTH:
            for node in ast.walk(expr):
                if isinstance(node, ast.Name) and node.id in pairs:
                    return self._root(pairs[node.id], pairs, keyed, unit, depth + 1)
        return "the data"

    def _object_lists(self, key: str | None, nodes: list[ast.AST], unit: _Unit) -> None:
        """``broadcast_object_list(xs)`` where ``xs`` is a literal list of ``k`` elements on some ranks and a list
        of another (or unknown) length on others: torch broadcasts the pickled sizes as a tensor of
        ``len(xs)`` elements, so the lengths must agree."""
        taint = self.an.func_taint.get(key, set()) if key is not None else self.an.module_taint
        walker = _Walker(self.an, unit, taint, self.an._class_of(key), key)
        assigned: dict[str, list[ast.expr]] = {}
        for names, value, index in _assignments(nodes):
            for name in names if index is None else ():
                arms = [value.body, value.orelse] if isinstance(value, ast.IfExp) else [value]
                assigned.setdefault(name, []).extend(arms)
        for node in nodes:
            if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Name)):
                continue
            full = self.an._collective(node.func, unit) if _dotted(node.func) else None
            name = node.args[0].id
            if full != "torch.distributed.broadcast_object_list" or name not in taint:
                continue
            values = assigned.get(name, [])
            literal = [v for v in values if isinstance(v, (ast.List, ast.Tuple))]
            lengths = {id(v): walker._length(v, 0) for v in values}
            fixed = {
                v: length[0].get((), 0)
                for v in values
                if isinstance(length := lengths[id(v)], tuple) and all(k == () for k in length[0])
            }
            if not literal or not any(v in fixed for v in literal):
                continue
            first = next(v for v in literal if v in fixed)
            other = next((v for v in values if v not in fixed or fixed[v] != fixed[first]), None)
            if other is None or (other not in fixed and isinstance(other, (ast.List, ast.Tuple))):
                continue
            size = (
                f"{fixed[other]} element{'s' if fixed[other] != 1 else ''}"
                if other in fixed
                else "a length lint cannot see"
            )
            why = (
                f"`{name}` holds {fixed[first]} element{'s' if fixed[first] != 1 else ''} on some ranks "
                f"(`{unit.text(first)}`, line {first.lineno + unit.offset}) and {size} on others "
                f"(`{unit.text(other)}`, line {other.lineno + unit.offset}); broadcast_object_list sends the "
                f"pickled sizes as a tensor of len({name}) elements, so the ranks' tensors differ: it fails, hangs "
                "or pairs the wrong objects"
            )
            fix = (
                "give every rank a list of the same length: wrap the value in one element "
                f"(`[value] if rank == src else [None]`, then take {name}[0])"
            )
            self._add(node, "size-mismatch", f"len({name})", why, fix, unit)

    def _check(self, key: str | None, nodes: list[ast.AST], unit: _Unit) -> None:
        self._object_lists(key, nodes, unit)
        _RankSizes(self, key, nodes, unit).check()
        keyed = self.keyed.get(key, {})
        pairs = _assignments(nodes)
        sized = _closure(pairs, set(), lambda value, _, names: self._sized(value, names, keyed))
        if not sized and not keyed:
            return
        values = {n: v for names, v, i in pairs if i is None for n in names if n in sized}
        self_class = self.an._class_of(key)
        for node in nodes:
            if isinstance(node, (ast.For, ast.AsyncFor)) and self._sized(node.iter, sized, keyed):
                origin = self._root(node.iter, values, keyed, unit)
                for call in (n for n in _own_nodes(node.body) if isinstance(n, ast.Call)):
                    found = self.an.classify(call, unit, self_class, key)
                    if found is not None and (found.kind == "coll" or found.target in self.an.reach):
                        self._count(call, found, unit, node.iter, origin)
            if not isinstance(node, ast.Call):
                continue
            name = _terminal(node.func)
            full = self.an._collective(node.func, unit) if _dotted(node.func) else None
            if full and full.startswith("torch.distributed.") and name in _SIZED_COLLECTIVES:
                args = [*node.args, *(k.value for k in node.keywords if k.arg in ("tensor", "input", "output"))]
                arg = next((a for a in args if self._sized(a, sized, keyed)), None)
                if arg is not None:
                    self._size(node, arg, unit, self._root(arg, values, keyed, unit))
            elif (
                not full
                and node.args
                and isinstance(node.func, ast.Attribute)
                and self._sized(node.args[0], sized, keyed)
            ):
                entry = self.an._framework(node, unit, self_class, key)
                if entry is not None and (entry.framework, entry.name) in _SAME_SHAPE_FRAMEWORK:
                    self._size(node, node.args[0], unit, self._root(node.args[0], values, keyed, unit))
            if name in _PER_KEY_CALLS and node.args and isinstance(node.func, ast.Attribute):
                entry = self.an._framework(node, unit, self_class, key)
                if entry is not None and entry.name == name and self._sized(node.args[0], sized, keyed):
                    origin = self._root(node.args[0], values, keyed, unit)
                    found = _Call("coll", _dotted(node.func) or name, name, f"{entry.framework}: {entry.issues}")
                    self._count(node, found, unit, node.args[0], origin, per_key=True)

    def _size(self, call: ast.Call, arg: ast.expr, unit: _Unit, origin: str) -> None:
        text = unit.text(arg)
        why = (
            f"the size of `{text}` comes from {origin}, so ranks whose data differ hand this "
            f"{_terminal(call.func)} tensors of different sizes: it fails, hangs until the timeout, or returns "
            "values that were not reduced"
        )
        if "keys of" in origin:
            fix = (
                "agree on the keys first: all_gather_object every rank's key set and stack the sorted union, with a "
                "zero for a key a rank lacks (or always fill every key)"
            )
        elif "boolean mask" in origin:
            fix = (
                "pad it to a length every rank shares before the collective (gather the counts and pad to the largest, "
                "as Accelerate's pad_across_processes does), and drop the padding afterwards"
            )
        else:
            fix = "give the tensor a size every rank knows in advance (torch.bincount(..., minlength=num_classes), padding)"
        self._add(call, "size-mismatch", f"size of {text}", why, fix, unit)

    def _count(
        self, call: ast.Call, found: _Call, unit: _Unit, source: ast.expr, origin: str, per_key: bool = False
    ) -> None:
        text = unit.text(source)
        what = found.note or found.display
        how = "makes one reduction per key of" if per_key else "runs once per item of"
        why = (
            f"this call ({what}) {how} `{text}`, whose size comes from {origin}: ranks whose data differ make "
            "different numbers of collectives, and the extra ones wait until the timeout or pair with another call"
        )
        fix = (
            "use the same keys on every rank (fill a missing key with a zero and count it separately), or agree on "
            "the keys first with all_gather_object"
        )
        self._add(call, "data-dependent-count", f"size of {text}", why, fix, unit, _dotted(call.func) or found.display)

    def _add(
        self, call: ast.Call, kind: str, cond: str, why: str, fix: str, unit: _Unit, name: str | None = None
    ) -> None:
        if id(call) in self.an.found:
            return
        finding = Finding(
            path=self.an.path,
            line=call.lineno + unit.offset,
            col=call.col_offset + unit.indent + 1,
            collective=name or _dotted(call.func) or unit.text(call.func),
            condition=cond,
            kind=kind,
            why=why,
            fix=fix,
            cell=unit.cell,
        )
        self.an.found[id(call)] = (kind, finding)


#: torch factories whose size is given by their arguments.
_SIZE_FACTORIES = frozenset({"zeros", "ones", "empty", "full", "rand", "randn", "randint", "arange"})
_NEW_FACTORIES = frozenset({"new_zeros", "new_ones", "new_empty", "new_full"})
#: Tensor arguments of the same-shape collectives (:data:`ops.SAME_SHAPE`), by keyword.
_SHAPED_KEYWORDS = frozenset(
    {"tensor", "tensors", "tensor_list", "input", "output", "input_tensor", "output_tensor", "input_tensor_list"}
)


class _RankSizes:
    """``size-mismatch`` from the rank (review64b M3): a tensor whose size comes from the rank
    (``torch.ones(4 if rank == 0 else 8)``, ``torch.zeros(rank + 1)``, ``torch.zeros(n)`` with ``n`` assigned from
    a rank expression, a size given as a tuple or list) handed to a collective whose tensors must have one shape on
    every rank (:data:`ops.SAME_SHAPE`: all_reduce, broadcast, all_gather's input and outputs...). Two sets of
    names of one scope: ``ints``, whose value differs between ranks (the module's rank dependence,
    :meth:`_Analysis.mentions_rank`, for what is not assigned in the scope; laundered names, agreed by an
    all_reduce or broadcast before the line, are not), and ``sized``, tensors (or lists) whose size does. The
    size of a tensor whose *values* differ (``torch.tensor([float(rank)])``) is not rank-dependent:
    ``x.shape``, ``x.size()``, ``x.numel()`` and ``len(x)`` are rank-dependent only when ``x`` is in ``sized``."""

    def __init__(self, sizes: _Sizes, key: str | None, nodes: list[ast.AST], unit: _Unit) -> None:
        self.sizes, self.an, self.key, self.nodes, self.unit = sizes, sizes.an, key, nodes, unit
        self.taint = self.an.func_taint.get(key, set()) if key is not None else self.an.module_taint
        self.laundered = self.an.laundered.get(key, {})
        self.pairs = [p for p in _assignments(nodes) + _loop_targets(nodes) if p[2] is None]
        self.local = {n for names, _, _ in self.pairs for n in names}
        self.ints: set[str] = set()
        self.sized: set[str] = set()

    def check(self) -> None:
        if not any(isinstance(n, ast.Call) and self._shaped_collective(n) for n in self.nodes):
            return
        _RankDtypes(self).check()
        for _ in range(4):
            before = (len(self.ints), len(self.sized))
            self.ints = _closure(self.pairs, self.ints, lambda value, _, names: self._int(value))
            self.sized = _closure(self.pairs, self.sized, lambda value, _, names: self._size(value))
            if (len(self.ints), len(self.sized)) == before:
                break
        if not self.sized:
            return
        for call, name, given in self.shaped_calls():
            arg = next((a for a in given if self._size(a)), None)
            if arg is not None:
                self._report(call, name, arg)

    def shaped_calls(self) -> Iterator[tuple[ast.Call, str, list[ast.expr]]]:
        """Each call of a same-shape collective in the function: the call, its name, its tensor arguments."""
        for call in (n for n in self.nodes if isinstance(n, ast.Call)):
            name = self._shaped_collective(call)
            if name:
                yield call, name, [*call.args, *(k.value for k in call.keywords if k.arg in _SHAPED_KEYWORDS)]

    def _shaped_collective(self, call: ast.Call) -> str | None:
        full = self.an._collective(call.func, self.unit) if _dotted(call.func) else None
        if full and full.startswith("torch.distributed.") and full.rpartition(".")[2] in ops.SAME_SHAPE:
            return full.rpartition(".")[2]
        return None

    def _laundered(self, node: ast.Name) -> bool:
        return node.id in self.laundered and node.lineno > self.laundered[node.id]

    def _int(self, node: ast.AST) -> bool:
        """Whether the value of ``node`` (a size, a count) can differ between ranks."""
        if isinstance(node, ast.Lambda):
            return False
        measured = _measured(node)
        if measured is not None:
            return self._size(measured)
        if isinstance(node, ast.Name):
            if self._laundered(node):
                return False
            if node.id in self.local:
                return node.id in self.ints or (_rank_name(node.id) and node.id in self.taint)
            return _rank_name(node.id) or node.id in self.taint
        if isinstance(node, (ast.Call, ast.Attribute, ast.Subscript)) and not any(
            isinstance(n, ast.Name) and n.id in self.local for n in ast.walk(node)
        ):
            return self.an.mentions_rank(node, self.taint, self.laundered)
        children = [c.value if isinstance(c, ast.keyword) else c for c in ast.iter_child_nodes(node)]
        return any(self._int(c) for c in children if isinstance(c, ast.expr))

    def _size(self, node: ast.AST) -> bool:
        """Whether the number of elements of ``node`` (a tensor or a list) can differ between ranks."""
        if isinstance(node, ast.Name):
            return node.id in self.sized
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            return any(self._size(e.value if isinstance(e, ast.Starred) else e) for e in node.elts)
        if isinstance(node, ast.ListComp):
            return self._size(node.elt) or any(self._range(g.iter) for g in node.generators)
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Mult) and isinstance(node.left, (ast.List, ast.Tuple)):
                return self._int(node.right) or self._size(node.left)
            if isinstance(node.op, ast.Mult) and isinstance(node.right, (ast.List, ast.Tuple)):
                return self._int(node.left) or self._size(node.right)
            return self._size(node.left) or self._size(node.right)
        if not isinstance(node, ast.Call):
            return False
        name = _terminal(node.func)
        full = self.an._resolve(node.func, self.unit) if _dotted(node.func) else ""
        if full.startswith("torch.") and name in _SIZE_FACTORIES:
            return any(self._int(a) for a in self._size_arguments(node, name)) or self._arange(node, name)
        if isinstance(node.func, ast.Attribute) and name in _NEW_FACTORIES:
            return any(self._int(a) for a in [*node.args[:1], *(k.value for k in node.keywords if k.arg == "size")])
        if name == "range":
            return self._range(node)
        if name in _SIZE_KEEPING:
            if isinstance(node.func, ast.Attribute) and self._size(node.func.value):
                return True
            return bool(node.args) and self._size(node.args[0])
        return False

    @staticmethod
    def _size_arguments(call: ast.Call, name: str) -> list[ast.expr]:
        given = [k.value for k in call.keywords if k.arg == "size"]
        if name in ("full",):
            return given or call.args[:1]
        if name == "randint":
            return given or (call.args[-1:] if len(call.args) >= 2 else [])
        if name == "arange":
            return []
        return given or list(call.args)

    def _arange(self, call: ast.Call, name: str) -> bool:
        """``torch.arange(n)`` with ``n`` rank-dependent, or ``arange(a, b)`` with one bound rank-dependent (both:
        ``arange(rank * k, rank * k + k)`` may keep its size; with a step, left to the run)."""
        return name == "arange" and self._range(call)

    def _range(self, call: ast.AST) -> bool:
        if not isinstance(call, ast.Call) or _terminal(call.func) not in ("range", "arange") or call.keywords:
            return False
        if len(call.args) == 1:
            return self._int(call.args[0])
        if len(call.args) == 2:
            return self._int(call.args[0]) != self._int(call.args[1])
        return False

    def _origin(self, arg: ast.expr) -> ast.expr:
        """The expression that makes ``arg``'s size rank-dependent, through the names assigned to it."""
        seen: set[str] = set()
        while isinstance(arg, ast.Name) and arg.id not in seen:
            seen.add(arg.id)
            value = next((v for names, v, _ in self.pairs if arg.id in names and self._size(v)), None)
            if value is None:
                break
            arg = value
            while True:
                if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute) and self._size(arg.func.value):
                    arg = arg.func.value  # t.float().cuda(): the tensor it converts
                elif isinstance(arg, ast.BinOp) and not isinstance(arg.left, (ast.List, ast.Tuple)):
                    arg = arg.left if self._size(arg.left) else arg.right  # arange(1.0, n + 1) * (rank + 1)
                else:
                    break
        return arg

    def _int_origin(self, node: ast.expr) -> ast.stmt | None:
        """The assignment of a name of the scope that gives a size argument of ``node`` its rank dependence."""
        if not isinstance(node, ast.Call):
            return None
        for arg in ast.walk(node):
            if isinstance(arg, ast.Name) and arg.id in self.ints and arg.id in self.local and not _rank_name(arg.id):
                for stmt in self.nodes:
                    if isinstance(stmt, ast.Assign) and any(arg.id in _target_names(t) for t in stmt.targets):
                        return stmt
        return None

    def _report(self, call: ast.Call, name: str, arg: ast.expr) -> None:
        unit = self.unit
        text = unit.text(arg)
        origin = self._origin(arg)
        where = "" if origin is arg else f" (`{unit.text(origin)}`, line {origin.lineno + unit.offset})"
        assigned = self._int_origin(origin)
        if assigned is not None and where:
            where = f"{where[:-1]}; `{unit.text(assigned)}`, line {assigned.lineno + unit.offset})"
        op = ops.BY_NAME.get(name)
        wrong = "data that was not (or only partly) reduced" if op is not None and op.reduces else "wrong data"
        why = (
            f"the size of `{text}`{where} comes from the rank, so the ranks hand this {name} tensors of different "
            f"sizes, and {name} needs one shape on every rank: on gloo it can hang until the timeout, abort, or "
            f"return {wrong} on some ranks with no error, while the others fail when a rank that returned ends its "
            "process"
        )
        fix = (
            "give the tensor a size every rank shares (one that does not depend on the rank); for data of each "
            "rank's own length, agree on the longest first (all_reduce of the length with ReduceOp.MAX), pad to it "
            "and send the true length alongside, or use all_gather_object"
        )
        self.sizes._add(call, "size-mismatch", f"size of {text}", why, fix, unit)


#: torch's dtype names (``torch.float32``...) and the tensor methods that convert to a fixed dtype.
_DTYPE_NAMES = frozenset(
    {
        "float16",
        "float32",
        "float64",
        "bfloat16",
        "half",
        "float",
        "double",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "int",
        "long",
        "short",
        "bool",
        "complex64",
        "complex128",
    }
)
_DTYPE_METHODS = frozenset({"double", "float", "half", "bfloat16", "int", "long", "short", "bool", "byte", "char"})
#: tensor methods whose result keeps the receiver's dtype
_DTYPE_KEEPING = frozenset(
    {"cuda", "cpu", "contiguous", "clone", "detach", "view", "reshape", "flatten", "squeeze", "unsqueeze", "t"}
)


def _dtype_key(written: str) -> str | None:
    """A dtype as written (``torch.float64``, ``double``) -> torch's name of it; None if not a plain one."""
    name = written.removeprefix("torch.")
    aliases = {"float": "float32", "double": "float64", "half": "float16", "long": "int64", "int": "int32"}
    name = aliases.get(name, name)
    return name if name in _DTYPE_NAMES else None


def _receiver_root(node: ast.AST) -> str | None:
    """``t`` of ``t.double().cuda()``: the name a chain of method calls starts from."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        node = node.func.value
    return node.id if isinstance(node, ast.Name) else None


def _names_dtype(node: ast.AST) -> bool:
    """Whether ``node`` mentions a torch dtype (``torch.float64``), so a rank-dependent ``.to(x)`` converts the
    dtype and not the device (``.to(f"cuda:{rank}")``)."""
    return any(
        isinstance(n, ast.Attribute) and n.attr in _DTYPE_NAMES and _dotted(n.value) == "torch" for n in ast.walk(node)
    )


class _RankDtypes:
    """``dtype-mismatch`` from the rank (review72c M4): a tensor whose dtype the rank chooses
    (``torch.ones(4, dtype=torch.float32 if rank == 0 else torch.float64)``, ``t.to(dt)`` with ``dt`` such a
    choice, ``if rank == 0: t = t.double()``) handed to a same-shape collective. lint72's gloo runs (4 ranks): float32
    on rank 0 and float64 elsewhere, rank 0 aborted (SIGABRT, "op.preamble.length <= op.nbytes. 8 vs 4") and the
    others raised; float32 and int32 (the same 4 bytes), every rank finished, rank 0 with 1.0000003576278687 and
    the others with 1065353219: one type's bytes added as the other's."""

    def __init__(self, sizes: _RankSizes) -> None:
        self.s = sizes
        self.typed: dict[str, ast.AST] = {}  # tensor name -> the expression or statement that makes its dtype per rank
        self.dtypes: set[str] = set()  # names assigned a dtype chosen by the rank (`dt = torch.float32 if ...`)

    def check(self) -> None:
        s = self.s
        for _ in range(4):
            before = len(self.typed) + len(self.dtypes)
            for names, value, _ in s.pairs:
                if not isinstance(value, ast.Call) and self._choice(value):
                    self.dtypes.update(names)
                origin = self._origin(value)
                if origin is not None:
                    for name in names:
                        self.typed.setdefault(name, origin)
            for stmt in (n for n in s.nodes if isinstance(n, ast.If)):
                self._converted_under_rank_test(stmt)
            if len(self.typed) + len(self.dtypes) == before:
                break
        if not self.typed:
            return
        for call, name, given in s.shaped_calls():
            for arg in given:
                origin = self._origin(arg)
                if origin is not None and not self._reassigned(arg, origin, call):
                    self._report(call, name, arg, origin)
                    break

    def _choice(self, node: ast.AST) -> bool:
        """Whether ``node`` is a dtype that can differ between ranks: it names a torch dtype and depends on the
        rank, or is a name assigned one."""
        if isinstance(node, ast.Name):
            return node.id in self.dtypes
        return _names_dtype(node) and self.s._int(node)

    def _origin(self, node: ast.AST) -> ast.AST | None:
        """What makes the dtype of ``node`` (a tensor) rank-dependent, or None."""
        if isinstance(node, ast.Name):
            return self.typed.get(node.id)
        if isinstance(node, ast.IfExp) and self.s.an.mentions_rank(node.test, self.s.taint, self.s.laundered):
            if self._conversion(node.body) != self._conversion(node.orelse):
                return node
        if not isinstance(node, ast.Call):
            return None
        dtype = next((k.value for k in node.keywords if k.arg == "dtype"), None)
        if dtype is not None and self._choice(dtype):
            return node
        if isinstance(node.func, ast.Attribute):
            method = node.func.attr
            if method in ("to", "type"):
                target = dtype or (node.args[0] if node.args else None)
                if target is not None and self._choice(target):
                    return node
                if target is not None and _names_dtype(target):
                    return None  # converted to one dtype on every rank
            if method in _DTYPE_KEEPING or (method == "to" and not _names_dtype(node)):
                return self._origin(node.func.value)
        return None

    @staticmethod
    def _conversion(node: ast.AST) -> str:
        """The dtype conversion ``node`` applies last, as written ("" for none): ``t.double()`` -> "double"."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in _DTYPE_METHODS and not node.args:
                return node.func.attr
            if node.func.attr in ("to", "type") and _names_dtype(node):
                return ast.unparse(node.args[0] if node.args else node.keywords[0].value)
            if node.func.attr in _DTYPE_KEEPING:
                return _RankDtypes._conversion(node.func.value)
        if isinstance(node, ast.Call):
            dtype = next((k.value for k in node.keywords if k.arg == "dtype"), None)
            if dtype is not None:
                return ast.unparse(dtype)
        return ""

    def _converted_under_rank_test(self, stmt: ast.If) -> None:
        """``if rank == 0: t = t.double()``: a plain assignment in one branch of a rank test that converts the
        dtype, where the other branch does not make the same conversion of that name."""
        s = self.s
        if not s.an.mentions_rank(stmt.test, s.taint, s.laundered):
            return
        for branch, other in ((stmt.body, stmt.orelse), (stmt.orelse, stmt.body)):
            for assign in (a for a in branch if isinstance(a, ast.Assign) and len(a.targets) == 1):
                target = assign.targets[0]
                kind = self._conversion(assign.value)
                if not isinstance(target, ast.Name) or not kind or target.id in self.typed:
                    continue
                if _receiver_root(assign.value) != target.id:
                    continue  # a tensor made afresh (`labels = torch.empty(n, dtype=torch.int64)`): its dtype
                    # against the other path's value is not followed (load_once_and_broadcast's labels agree)
                if _dtype_key(kind) is not None and _dtype_key(kind) == self._made_as(target.id):
                    continue  # `t = torch.ones(4)` then `t = t.float()`: already float32, nothing changes
                same = any(
                    isinstance(a, ast.Assign)
                    and len(a.targets) == 1
                    and isinstance(a.targets[0], ast.Name)
                    and a.targets[0].id == target.id
                    and self._conversion(a.value) == kind
                    for a in other
                )
                if not same:
                    self.typed[target.id] = stmt

    def _made_as(self, name: str) -> str | None:
        """The dtype every plain assignment of ``name`` in the scope outside conversions gives it, when each is a
        torch factory of floats without dtype= (float32) or with a written dtype; None if lint cannot tell."""
        made: set[str | None] = set()
        for names, value, _ in self.s.pairs:
            if name not in names or _receiver_root(value) == name:
                continue
            dtype = (
                next((k.value for k in value.keywords if k.arg == "dtype"), None)
                if isinstance(value, ast.Call)
                else None
            )
            if dtype is not None:
                made.add(_dtype_key(ast.unparse(dtype)))
            elif (
                isinstance(value, ast.Call)
                and _terminal(value.func) in ("ones", "zeros", "rand", "randn", "empty")
                and (_dotted(value.func) or "").startswith("torch.")
            ):
                made.add("float32")
            else:
                made.add(None)
        return made.pop() if len(made) == 1 else None

    def _reassigned(self, arg: ast.expr, origin: ast.AST, call: ast.Call) -> bool:
        """Whether the name ``arg`` is assigned again after ``origin`` and before ``call`` (outside it): lint
        then cannot tell which value reaches the call."""
        if not isinstance(arg, ast.Name):
            return False
        start = getattr(origin, "end_lineno", None) or getattr(origin, "lineno", 0)
        return any(
            isinstance(n, ast.Assign)
            and any(arg.id in _target_names(t) for t in n.targets)
            and start < n.lineno < call.lineno
            and not (isinstance(origin, ast.stmt) and any(m is n for m in ast.walk(origin)))
            for n in self.s.nodes
        )

    def _report(self, call: ast.Call, name: str, arg: ast.expr, origin: ast.AST) -> None:
        unit = self.s.unit
        text = unit.text(arg)
        shown = unit.text(origin.test) if isinstance(origin, ast.If) else unit.text(origin)
        if isinstance(origin, ast.If):
            where = f" (converted under `{shown}`, line {origin.lineno + unit.offset})"
        elif origin is arg:
            where = ""
        else:
            where = f" (`{shown}`, line {origin.lineno + unit.offset})"
        why = (
            f"the dtype of `{text}`{where} comes from the rank, so the ranks hand this {name} tensors of different "
            f"dtypes, and {name} needs one dtype on every rank; gloo checks neither: an all_reduce of float32 on "
            "rank 0 and float64 on the others aborted rank 0 (SIGABRT, gloo's \"op.preamble.length <= "
            'op.nbytes") and the others failed as its connections closed, and one of float32 and int32 (the same '
            "4 bytes) finished on every rank with no error, one type's bytes added as the other's"
        )
        fix = (
            "give the tensor one dtype on every rank: pass the same dtype= everywhere, or convert it on every rank "
            "(`t.to(torch.float64)`) before the call"
        )
        self.s.sizes._add(call, "dtype-mismatch", f"dtype of {text}", why, fix, unit)


def _measured(node: ast.AST) -> ast.expr | None:
    """``x`` of ``x.shape``, ``x.size()``, ``x.numel()``, ``len(x)``: what a size is read from."""
    if isinstance(node, ast.Attribute) and node.attr == "shape":
        return node.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("size", "numel"):
        return node.func.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len" and len(node.args) == 1:
        return node.args[0]
    return None


#: The rank argument of torch.distributed calls that name one rank: (keyword, its position).
#: Collectives whose receive (or send) list must be given on the root only: torch.distributed validates it on
#: every rank before communicating and raises on the others (``_validate_output_list_for_rank``; ``scatter``).
#: Calls whose output list torch sizes by their group: (parameter, its position, ``group``'s position).
_GROUP_OUTPUT_LIST = {
    "all_gather_object": ("object_list", 0, 2),
    "all_gather": ("tensor_list", 0, 2),
    "gather_object": ("object_gather_list", 1, 3),
    "gather": ("gather_list", 1, 3),
}
_ROOT_ONLY_LIST = {
    "gather": ("gather_list", 1, "dst"),
    "gather_object": ("object_gather_list", 1, "dst"),
    "scatter": ("scatter_list", 1, "src"),
}
#: The name torch's message uses where it differs from the parameter's: gather_object validates its
#: ``object_gather_list`` with gather's ``_validate_output_list_for_rank`` (review16b).
_TORCH_WORD = {"object_gather_list": "gather_list"}
#: Names of a rank within a group (tensor-, data-, pipeline-parallel, a node's), never the global rank.
_GROUP_RANK_NAME = re.compile(
    r"^(?:tp|dp|pp|cp|ep|sp|mp|tensor_parallel|data_parallel|pipeline_parallel|model_parallel|"
    r"replica|group|local|node_local|intra_node|shard)_rank$|^rank_in_(?:group|replica|node)$"
)


def _group_holds(made: ast.Call, rank: int) -> bool:
    """Whether ``new_group(...)`` holds global rank ``rank``: no ranks (every rank), ``range(n)`` or
    ``list(range(n))`` for rank 0, or a literal list holding it."""
    ranks = _argument(made, 0, "ranks")
    if ranks is None:
        return True  # new_group() holds every rank
    if isinstance(ranks, ast.Call) and _terminal(ranks.func) == "list" and ranks.args:
        ranks = ranks.args[0]
    if isinstance(ranks, ast.Call) and _terminal(ranks.func) == "range" and len(ranks.args) == 1:
        return rank == 0  # range(n) starts at global rank 0
    found = _const_ints(ranks)
    return found is not None and rank in found


def _names_a_group_rank(node: ast.AST) -> bool:
    """``tp_rank``, ``self.dp_rank``, ``args.local_rank``: a name that says it is a rank within a group."""
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
    return bool(name) and bool(_GROUP_RANK_NAME.match(name))


_RANK_ARGUMENT = {
    "gather": ("dst", 2),
    "gather_object": ("dst", 2),
    "reduce": ("dst", 1),
    "scatter": ("src", 2),
    "scatter_object_list": ("src", 2),
    "broadcast": ("src", 1),
    "broadcast_object_list": ("src", 1),
}
#: Collectives that reduce with an ``op=`` every rank must pass alike (the ops table's ``reduces``).
_REDUCING = frozenset(op.name for op in ops.OPS if op.reduces)
#: Position of their ``op`` argument (torch 2.13's signatures; ``group`` follows it).
_OP_POSITION = {
    "all_reduce": 1,
    "all_reduce_coalesced": 1,
    "reduce": 2,
    "reduce_scatter": 2,
    "reduce_scatter_tensor": 2,
    "_reduce_scatter_base": 2,
}
#: Collectives whose tensor's dtype and shape must be the same on every rank: name -> position of the tensor.
_TENSOR_ARGUMENT = {
    "all_reduce": 0,
    "reduce": 0,
    "broadcast": 0,
    "all_gather": 1,
    "all_gather_into_tensor": 1,
    "reduce_scatter_tensor": 1,
    "all_to_all_single": 1,
}
#: Batch keys of padded token sequences: a batch is padded to its own longest sequence, so their width differs
#: between ranks (Hugging Face collators' ``padding="longest"``, the default of DataCollatorWithPadding).
_PADDED_KEYS = frozenset(
    {"input_ids", "attention_mask", "token_type_ids", "position_ids", "decoder_input_ids", "decoder_attention_mask"}
)
#: Calls whose value has a fixed Python type whatever the data (so ``torch.tensor`` of it has a fixed dtype).
_TYPED_CALLS = frozenset({"float", "int", "bool", "len", "item", "numel", "round", "math.floor", "math.ceil"})
#: Tensor methods whose result is a tensor of the receiver's dtype (or a fixed one): ``mask.sum()``.
_TENSOR_RESULTS = frozenset(
    {"sum", "mean", "float", "double", "long", "int", "detach", "clone", "count_nonzero", "norm", "size", "nelement"}
)


class _Retries:
    """``retry`` - a collective reached inside the ``try`` of a loop whose ``except`` lets the loop go on (a retry):
    the rank whose attempt raised (a stale file handle, a flaky read) runs the collective again, alone, while the
    ranks whose attempt succeeded have gone on, so it pairs with their next collective or waits until the timeout.
    Also the collectives of a function of the file decorated with a retrying decorator: one whose wrapper calls
    the function it wraps in such a loop (vjepa2's ``robust_checkpoint_loader``; round 14)."""

    def __init__(self, an: _Analysis) -> None:
        self.an = an

    def run(self) -> None:
        retrying: dict[str, int] = {}  # name of a function whose wrapper retries what it wraps -> the except line
        for key, func in self.an.table.items():
            wrapped = self._params(key)
            for handler, calls in self._retried_calls(func.node):
                for call in calls:
                    if isinstance(call.func, ast.Name) and call.func.id in wrapped:
                        for name in self._enclosing(key):
                            retrying.setdefault(name, handler.lineno + func.unit.offset)
                        continue
                    found = self.an.classify(call, func.unit, func.self_class, key)
                    if found is not None and (found.kind == "coll" or found.target in self.an.reach):
                        self._add(call, func.unit, f"except at line {handler.lineno + func.unit.offset}", None)
        if not retrying:
            return
        for key, func in self.an.table.items():
            for deco in func.node.decorator_list:
                name = _terminal(deco.func if isinstance(deco, ast.Call) else deco)
                if name not in retrying:
                    continue
                for call in (n for n in _own_nodes(func.node.body) if isinstance(n, ast.Call)):
                    found = self.an.classify(call, func.unit, func.self_class, key)
                    if found is not None and (found.kind == "coll" or found.target in self.an.reach):
                        self._add(call, func.unit, f"@{name}", (key, name, retrying[name]))

    def _params(self, key: str) -> set[str]:
        """Parameter names of ``key`` and of the functions around it (a decorator's ``fn``)."""
        names: set[str] = set()
        seen: set[str] = set()
        while key in self.an.table and key not in seen:  # a function nested in one of its own name: its own parent
            seen.add(key)
            args = self.an.table[key].node.args
            names |= {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
            key = self.an.table[key].parent
        return names

    def _enclosing(self, key: str) -> list[str]:
        """``key``'s enclosing functions' names (a decorator, and the factory that makes it)."""
        names: list[str] = []
        parent = self.an.table[key].parent
        while parent in self.an.table and parent not in names and parent != key:
            names.append(parent.rpartition(".")[2])
            parent = self.an.table[parent].parent
        return names

    @staticmethod
    def _retried_calls(node: ast.FunctionDef | ast.AsyncFunctionDef):
        """(handler, the calls of its try body) for each ``try`` inside a loop of ``node`` (not of functions
        inside it) whose body leaves the loop on success (``return``, ``break``) and one of whose handlers does not
        always raise (a raise under ``if attempt == times:`` still lets the earlier attempts go on): a failed
        attempt runs the same body again."""
        for loop in (n for n in _own_nodes(node.body) if isinstance(n, (ast.For, ast.AsyncFor, ast.While))):
            for tried in (n for n in _own_nodes(loop.body) if isinstance(n, ast.Try)):
                if not any(isinstance(n, (ast.Return, ast.Break)) for n in _own_nodes(tried.body)):
                    continue  # success does not leave the loop: the next turn does other work, not this again
                handler = next(
                    (h for h in tried.handlers if not any(isinstance(st, ast.Raise) for st in h.body)),
                    None,
                )
                if handler is not None:
                    yield handler, [n for n in _own_nodes(tried.body) if isinstance(n, ast.Call)]

    def _add(self, call: ast.Call, unit: _Unit, cond: str, decorated) -> None:
        if id(call) in self.an.found:
            return
        shown = _dotted(call.func) or unit.text(call.func)
        if decorated is None:
            where = f"inside the `try` of a loop whose `{cond}` lets the loop go on"
        else:
            func, name, line = decorated
            where = f"in `{func}`, which `@{name}` wraps in a loop that calls it again when it raises (except at line {line})"
        why = (
            f"`{shown}` runs {where}: a rank whose attempt raised (a stale file handle, a flaky read) makes this "
            "collective again, alone, while the ranks whose attempt succeeded have gone on, so it pairs with their "
            "next collective or waits until the timeout"
        )
        fix = (
            "retry only the rank's own part (the read), outside the collective; or decide together: catch the error "
            "into a flag, all_reduce it with ReduceOp.MAX, and retry on every rank when any rank failed"
        )
        finding = Finding(
            path=self.an.path,
            line=call.lineno + unit.offset,
            col=call.col_offset + unit.indent + 1,
            collective=shown,
            condition=cond,
            kind="retry",
            why=why,
            fix=fix,
            cell=unit.cell,
        )
        self.an.found[id(call)] = ("retry", finding)


class _Agreement:
    """Arguments that every rank must pass alike and that lint can see differ, or be meant per group:

    * ``group-rank`` - ``dist.gather(..., dst=d, group=g)`` (also ``reduce``, ``scatter``, ``broadcast`` and their
      object variants) where ``d`` is a rank *within* ``g`` (``dist.get_rank(g)``, or a name the function
      compares with it): torch.distributed takes ``dst``/``src`` as a global rank even with ``group=``, so the
      members of a group that does not hold that global rank raise, or the call waits for a rank that never
      joins (vLLM PR #2528, pytorch PR #118359);
    * ``dtype-mismatch`` - ``torch.tensor(x)`` without ``dtype=`` handed to an all_reduce/all_gather/broadcast,
      where ``x`` is an accumulator that adds up per-rank values (``self.total += value``) or a numpy scalar whose
      type a test on the rank picks (``np.float32(a) if rank == 0 else np.float64(b)``): its
      Python type, and so the tensor's dtype, can differ between ranks (an int on one, a float or a numpy
      ``float64``/``bool_`` on another), and the collective then fails on a byte-count mismatch or hangs
      (ms-swift issue #9550);
    * ``size-mismatch`` - an all_gather (torch's, Accelerate's ``gather``/``gather_for_metrics``, or a function of
      the file reaching one) of a padded token batch (``batch["input_ids"]``): each rank pads to its own longest
      sequence (transformers issue #28791); or of ``model.generate(...)``'s sequences, which end at each rank's
      own length, not padded across processes first.

    * ``root-only-list`` - ``dist.gather(t, gather_list, dst=0)`` (also ``gather_object``'s ``object_gather_list``
      and ``scatter``'s ``scatter_list``) with a list built on every rank, under no condition: torch.distributed
      checks the argument before communicating and raises ``ValueError`` on every rank but the root, which then
      waits for them (pytorch/pytorch PR #161467, issue #25463).

    What lint cannot see (a tensor sized by data it cannot read, a timeout, dict keys that come from data) is
    left to the run."""

    def __init__(self, an: _Analysis) -> None:
        self.an = an
        self._pairs_of: dict[int, tuple[list, list]] = {}  # id(nodes) -> (nodes, their assignments)
        self._named_of: dict[int, tuple[list, dict]] = {}  # id(nodes) -> (nodes, name -> assigned values)
        self._group_counts: dict[int, int] = {}  # id(node) -> the group-making calls under it (_groups_under)

    def _pairs(self, nodes: list[ast.AST]) -> list[tuple[list[str], ast.expr, int | None]]:
        """:func:`_assignments` of a scope, worked out once per scope: once per collective, a long script's
        thousand calls each scanned the whole script (attack21 a02: 2,000 calls took 14x the time of 500)."""
        kept = self._pairs_of.get(id(nodes))
        if kept is None or kept[0] is not nodes:
            kept = self._pairs_of[id(nodes)] = (nodes, _assignments(nodes))
        return kept[1]

    def _named_values(self, nodes: list[ast.AST]) -> dict[str, list[ast.expr]]:
        """Name -> the values plain assignments of the scope give it (``out = ...``), in order, once per scope."""
        kept = self._named_of.get(id(nodes))
        if kept is None or kept[0] is not nodes:
            found: dict[str, list[ast.expr]] = {}
            for n in nodes:
                if isinstance(n, ast.Assign):
                    for name in {t.id for t in n.targets if isinstance(t, ast.Name)}:
                        found.setdefault(name, []).append(n.value)
            kept = self._named_of[id(nodes)] = (nodes, found)
        return kept[1]

    def run(self) -> None:
        self._decorated_generators()
        for key, nodes, unit in self.an._scopes():
            if not unit.report or (key is not None and not self.an.table[key].unit.report):
                continue
            self_class = self.an._class_of(key)
            finalizer = key is not None and key.rpartition(".")[2] == "__del__"
            handled = self._signal_handlers().get(key or "")
            for test in (n for n in nodes if isinstance(n, ast.If)):
                self._group_order(test, key, unit, self_class)
            for call in (n for n in nodes if isinstance(n, ast.Call)):
                self._unwaited_p2p(call, nodes, unit)
                found = self.an.classify(call, unit, self_class, key)
                if found is None:
                    continue
                if finalizer and (found.kind == "coll" or found.target in self.an.reach):
                    self._finalizer(call, found, key, unit)
                if handled and (found.kind == "coll" or found.target in self.an.reach):
                    self._in_signal_handler(call, found, key, handled, unit)
                if found.kind == "coll" and found.target.startswith("torch.distributed."):
                    name = found.target.rpartition(".")[2]
                    self._group_rank(call, name, key, nodes, unit)
                    self._dtype(call, name, key, nodes, unit, self_class)
                    self._root_only_list(call, name, key, nodes, unit)
                    self._world_sized_list(call, name, key, nodes, unit)
                    self._non_member(call, name, key, nodes, unit)
                    self._self_root(call, name, key, nodes, unit)
                    self._derived_root(call, name, key, nodes, unit)
                    self._chosen_root(call, name, key, nodes, unit)
                    self._reduce_op(call, name, key, unit)
                    self._unwaited(call, name, nodes, unit)
                    self._read_before_wait(call, name, nodes, unit)
                    self._aliased(call, name, nodes, unit)
                    self._discarded(call, name, key, unit)
                self._padded(call, found, unit, nodes)

    # -- a collective in __del__

    def _decorated_generators(self) -> None:
        """``generator-decorated``: a context manager that makes a collective (a ``@contextmanager`` function of
        the file whose body reaches one, or ``main_process_first``) used as the decorator of a generator function.
        A context manager used as a decorator wraps the call (``ContextDecorator``), and calling a generator
        function only creates the generator: the collectives run, and the block ends, before any of the body
        does, so the order the manager sets up holds for nothing (round 18: the replicas, released at once,
        read a cache the main process writes only when its generator is exhausted)."""
        for func in self.an.funcs:
            if not func.unit.report or not any(
                isinstance(n, (ast.Yield, ast.YieldFrom)) for n in _own_nodes(func.node.body)
            ):
                continue
            for decorator in func.node.decorator_list:
                if not isinstance(decorator, ast.Call) or _dotted(decorator.func) is None:
                    continue
                found = self.an.classify(decorator, func.unit, None, func.parent)
                if found is None:
                    continue
                if found.kind == "call":
                    manager = self.an.table.get(found.target)
                    if manager is None or found.target not in self.an.reach:
                        continue
                    kinds = {_terminal(d.func if isinstance(d, ast.Call) else d) for d in manager.node.decorator_list}
                    if "contextmanager" not in kinds:
                        continue
                elif not found.target.startswith("wrapper."):
                    continue
                name = func.node.name
                shown = _dotted(decorator.func) or func.unit.text(decorator.func)
                why = (
                    f"`{name}` is a generator function, and `@{shown}(...)` wraps only the call `{name}(...)`, which "
                    "creates the generator without running any of its body: the manager's collectives run and its "
                    f"block ends before the first item is made, so nothing of `{name}`'s body runs in the order the "
                    "manager sets up (a rank it releases reads what the others have not written yet)"
                )
                fix = (
                    f"use `with {shown}(...):` around the code that consumes the generator (or around a list built "
                    f"from it: `records = list({name}(...))`), or make `{name}` return a list"
                )
                self._add(decorator, "generator-decorated", f"@{shown} on a generator function", why, fix, func.unit)

    def _finalizer(self, call: ast.Call, found, key: str, unit: _Unit) -> None:
        """A collective reached from ``__del__``: it runs when the rank frees the object (its last reference
        dropped, or a garbage collection freeing a cycle), a moment of each rank's own."""
        cls = key.rpartition(".")[0]
        shown = _dotted(call.func) or unit.text(call.func)
        via = "" if found.kind == "coll" else ", which reaches a collective,"
        why = (
            f"`{cls}.__del__` calls `{shown}`{via} and Python runs `__del__` when this rank drops the object's last "
            "reference (or when its garbage collector frees a cycle holding it): a moment of each rank's own, so "
            "the ranks reach this call at different points of their programs (one keeps the object in a list, "
            "another drops it at a return) or not at all (objects alive at exit), and it pairs with another "
            "collective or waits until the timeout"
        )
        fix = (
            f"make the call explicitly where every rank reaches it (a method such as `{cls.rpartition('.')[2]}"
            ".all_reduce()` called after the loop) and keep `__del__` free of collectives"
        )
        self._add(call, "finalizer", f"{cls}.__del__", why, fix, unit)

    # -- a collective in a signal handler

    def _signal_handlers(self) -> dict[str, tuple[str, int]]:
        """Functions of the file installed with ``signal.signal(SIG, handler)``: key -> (the signal as written,
        the line that installs it)."""
        if getattr(self, "_handlers", None) is None:
            self._handlers: dict[str, tuple[str, int]] = {}
            for call in self.an.calls_named("signal"):
                if len(call.args) < 2 or not (_dotted(call.func) or "").endswith("signal.signal"):
                    continue
                scope = self.an._enclosing_key(call)
                unit = self.an.table[scope].unit if scope else self.an.units[0]
                target = self.an._hook_function(call.args[1], unit, self.an._class_of(scope), scope)
                if target is not None:
                    self._handlers[target] = (unit.text(call.args[0]), call.lineno + unit.offset)
        return self._handlers

    def _in_signal_handler(self, call: ast.Call, found, key: str, handled: tuple[str, int], unit: _Unit) -> None:
        """A collective reached from a signal handler: Python runs the handler in the main thread of the
        process the signal reaches, between two bytecodes of whatever that rank is doing (old Lightning's SLURM
        ``sig_handler`` saved a checkpoint there; round 24 of the real-world corpus)."""
        signal_name, line = handled
        shown = _dotted(call.func) or unit.text(call.func)
        via = "" if found.kind == "coll" else ", which reaches a collective,"
        func = self.an.table[key].node.name
        why = (
            f"`{func}` is the handler of {signal_name} (installed at line {line}) and calls `{shown}`{via}: Python "
            "runs a handler in the process the signal reaches, between two bytecodes of whatever that rank is "
            "doing, so only the ranks that receive the signal make this call, each at a point of its own, and it "
            "pairs with another collective or waits until the timeout (a signal sent to one PID reaches that "
            "process only; one sent to every rank reaches each at a step of its own)"
        )
        fix = (
            "only record the signal in the handler (`self.preempted = True`); at a point every rank reaches (the "
            "end of a step) all_reduce that flag with ReduceOp.MAX and, if any rank got the signal, make the "
            "collective save on every rank"
        )
        self._add(call, "signal-handler", f"{func} handles {signal_name}", why, fix, unit)

    # -- an async call whose handle is dropped, an output list that holds one tensor many times

    def _unwaited(self, call: ast.Call, name: str, nodes: list[ast.AST], unit: _Unit) -> None:
        """``dist.all_reduce(t, async_op=True)`` as a statement of its own: the Work handle is dropped, so nothing
        waits for the call to complete before ``t`` is read (OpenNMT-py issue #2295's rescale)."""
        flag = next((k.value for k in call.keywords if k.arg == "async_op"), None)
        if not (isinstance(flag, ast.Constant) and flag.value is True):
            return
        if not any(isinstance(n, ast.Expr) and n.value is call for n in nodes):
            return
        if name in ("barrier", "monitored_barrier"):  # review52b M1: a barrier has no tensors; it orders nothing
            effect = (
                "so this line orders nothing: the code after it can run before the other ranks have arrived, as if "
                "there were no barrier"
            )
            use = "before the code the barrier is meant to hold back"
        else:
            barrier = self._later_barrier(call, nodes, unit)
            if barrier is not None:
                self._unwaited_before_barrier(call, name, unit, *barrier)
                return
            effect = (  # review65b C2: not "reads its tensors": a temporary (torch.zeros(1)) is read by nothing
                "so a read of its tensors after this line may see them while the backend is still writing them (on "
                "gloo a worker thread, on NCCL the communication stream) until something waits for the call; on "
                "gloo a later blocking barrier() of the same group does (gloo's barrier first waits for all earlier "
                "work of its group: torch's ProcessGroupGloo.hpp); on NCCL the handle's wait() is what makes the "
                "current stream wait for it (torch's ProcessGroupNCCL.hpp)"
            )
            use = "before the tensors are used"
        why = (
            f"`async_op=True` makes {name} return a Work handle at once, and this line drops it: no line waits for "
            f"the call itself, {effect}, and an error in the call is not raised here: on gloo a timeout in it "
            "closes the group's connections, so a later collective fails instead; on NCCL the watchdog ends the "
            "process (TORCH_NCCL_ASYNC_ERROR_HANDLING's default, 3, tears it down: torch's ProcessGroupNCCL.hpp)"
        )
        fix = f"keep the handle (`work = dist.{name}(..., async_op=True)`) and call `work.wait()` {use}"
        self._add(call, "unwaited-async", "async_op=True, handle dropped", why, fix, unit)

    def _unwaited_p2p(self, call: ast.Call, nodes: list[ast.AST], unit: _Unit) -> None:
        """review72c M5: ``dist.isend(t, dst=1)`` (or ``irecv``) as a statement of its own. On gloo the Work holds
        the transport buffer of the message (torch's ProcessGroupGloo.cpp, send(): "The work captures the tensor
        ... and the unbound buffer to synchronize on completion of the send"); dropping it can lose the message.
        lint72's runs, 4 ranks, rank 0 `dist.isend(t, dst=1)` and rank 1 `dist.recv(t, src=0)`: with the handle
        dropped, rank 1 timed out in 2 of 4 runs (a barrier after) and failed in 4 of 4 (none); with it kept, 8 of
        8 finished with rank 0's value. A dropped ``irecv``: rank 1 raised "Timed out waiting 3000ms for recv
        operation to complete"."""
        if not _dotted(call.func):
            return
        full = self.an._resolve(call.func, unit).replace("torch.distributed.distributed_c10d.", "torch.distributed.")
        name = full.rpartition(".")[2]
        if full.rpartition(".")[0] != "torch.distributed" or name not in ("isend", "irecv"):
            return
        if not any(isinstance(n, ast.Expr) and n.value is call for n in nodes):
            return
        if name == "isend":
            lost = (
                "so no line waits for the send, and on gloo the Work is what holds the buffer gloo sends from "
                "(torch's ProcessGroupGloo.cpp: the work captures the tensor and the unbound buffer \"to synchronize "
                'on completion of the send"): with it dropped, a message not yet written out can be lost, and the '
                "matching recv waits until the timeout, or fails when this rank ends its process (the same code "
                "keeping the handle finishes)"
            )
            fix = (
                "keep the handle (`work = dist.isend(...)`) and call `work.wait()` before the tensor is changed or "
                "the rank moves on, or use the blocking `dist.send`"
            )
        else:
            lost = (
                "so no line waits for the receive: a read of the tensor after this line may see it unwritten, and "
                "on gloo the Work is what holds the buffer gloo receives into (torch's ProcessGroupGloo.cpp: the "
                'work captures the tensor and the unbound buffer "to synchronize on completion of the recv"): '
                "with it dropped, the message can go unreceived, and ranks then wait until the timeout"
            )
            fix = (
                "keep the handle (`work = dist.irecv(...)`) and call `work.wait()` before the tensor is read, or "
                "use the blocking `dist.recv`"
            )
        why = (
            f"`dist.{name}` returns a Work handle at once, and this line drops it, {lost}; an error in the call is "
            "not raised here"
        )
        self._add(call, "unwaited-async", f"{name}, handle dropped", why, fix, unit)

    def _later_barrier(
        self, call: ast.Call, nodes: list[ast.AST], unit: _Unit
    ) -> tuple[int, tuple[int, str] | None] | None:
        """review72c M1: the line of a blocking ``dist.barrier()`` on the same group (the same ``group=`` as
        written, or none on both) later in the block of the dropped async call, and the first statement between
        them that uses the call's tensor (its line and the tensor's name), if any. None when no such barrier
        comes first, or a compound statement comes before it (what it runs is not followed)."""
        statement = next((n for n in nodes if isinstance(n, ast.Expr) and n.value is call), None)
        if statement is None:
            return None
        block = _holding_block(statement, nodes)
        if block is None:
            return None
        group = next((ast.unparse(k.value) for k in call.keywords if k.arg == "group"), None)
        tensor = call.args[0] if call.args and isinstance(call.args[0], ast.Name) else None
        read: tuple[int, str] | None = None
        for later in block[block.index(statement) + 1 :]:
            value = later.value if isinstance(later, ast.Expr) else None
            if (
                isinstance(value, ast.Call)
                and _dotted(value.func)
                and self.an._collective(value.func, unit) == "torch.distributed.barrier"
                and not _async_op(value)
                and next((ast.unparse(k.value) for k in value.keywords if k.arg == "group"), None) == group
            ):
                return later.lineno + unit.offset, read
            if isinstance(later, (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try)):
                return None
            if read is None and tensor is not None:
                use = _bare_use(later, tensor.id)
                if use is not None:
                    read = (use.lineno + unit.offset, tensor.id)
        return None

    def _unwaited_before_barrier(
        self, call: ast.Call, name: str, unit: _Unit, barrier: int, read: tuple[int, str] | None
    ) -> None:
        read_checked = bool(call.args) and isinstance(call.args[0], ast.Name)
        """The dropped async call of :meth:`_unwaited` followed, in its block, by a blocking barrier of its group
        at line ``barrier``: on gloo that barrier completes it (review72c t14b, lint72's m1_barrier_after: 4.0 on
        every rank, ``is_completed()`` True), so only a read between the two is unordered there
        (m1_read_before_barrier: 1.0 on every rank)."""
        if read is not None:
            line, tensor = read
            between = (
                f"; but line {line} reads `{tensor}` before that barrier, while the backend may still be writing it "
                "(on gloo a worker thread), so there each rank reads its own value, the result, or a mix"
            )
            fix = (
                f"keep the handle (`work = dist.{name}(..., async_op=True)`) and call `work.wait()` before line "
                f"{line}, or read `{tensor}` only after the barrier at line {barrier}"
            )
        else:
            between = f", and no line between reads `{call.args[0].id}`" if read_checked else ""
            fix = (
                f"keep the handle (`work = dist.{name}(..., async_op=True)`) and call `work.wait()` before the "
                f"barrier at line {barrier}: wait() completes the call on every backend and raises its error here"
            )
        why = (
            f"`async_op=True` makes {name} return a Work handle at once, and this line drops it. On gloo the "
            f"blocking barrier at line {barrier} completes it: gloo's barrier first waits for all earlier work of "
            f"its group (torch's ProcessGroupGloo.hpp), so its tensors are written when line {barrier} returns"
            f"{between}. On NCCL each call runs on the communication stream, and the handle's wait() is what makes "
            "the current stream wait for it (torch's ProcessGroupNCCL.hpp). An error in the call is not raised at "
            "this line: the handle that would raise it is gone"
        )
        self._add(call, "unwaited-async", "async_op=True, handle dropped", why, fix, unit)

    def _read_before_wait(self, call: ast.Call, name: str, nodes: list[ast.AST], unit: _Unit) -> None:
        """``work = dist.all_reduce(t, async_op=True)``, then a statement of the same block that uses ``t`` before
        one that calls ``work.wait()`` (review70b M1: each rank returned its own ``t[0].item()``, 1, 2, 3, 4, where
        the sum was 10). Only the tensor a collective writes (its first argument, a name); a use of its shape,
        dtype or device is no read; the look stops at a statement that names the handle in any other way (it may
        be waited there, or later by whoever it is handed to)."""
        if name not in _WRITES_FIRST_ARGUMENT or not _async_op(call) or not call.args:
            return
        tensor = call.args[0]
        if not isinstance(tensor, ast.Name):
            return
        assign = next(
            (
                n
                for n in nodes
                if isinstance(n, ast.Assign)
                and n.value is call
                and len(n.targets) == 1
                and isinstance(n.targets[0], ast.Name)
            ),
            None,
        )
        if assign is None:
            return
        handle = assign.targets[0].id
        nested: set[int] = set()
        block = None
        for n in nodes:
            for part in ("body", "orelse", "finalbody"):
                body = getattr(n, part, None)
                if isinstance(body, list):
                    nested.update(id(st) for st in body)
                    if any(st is assign for st in body):
                        block = body
        if block is None:  # the function's own body: the statements of ``nodes`` inside no other
            block = sorted(
                (n for n in nodes if isinstance(n, ast.stmt) and id(n) not in nested),
                key=lambda n: (n.lineno, n.col_offset),
            )
            if not any(st is assign for st in block):
                return
        group = next((ast.dump(k.value) for k in call.keywords if k.arg == "group"), None)
        for statement in block[block.index(assign) + 1 :]:
            if any(isinstance(n, ast.Name) and n.id == handle for n in ast.walk(statement)):
                return  # waited here (or handed on): ordered from here on
            if _barrier_of(statement) == (group,):
                return  # review74c C1: a barrier of the same group waits for all earlier work of it (gloo)
            use = _bare_use(statement, tensor.id)
            if use is not None:
                line = use.lineno + unit.offset
                why = (
                    f"`{handle} = dist.{name}({tensor.id}, ..., async_op=True)` returns at once, and line "
                    f"{line} uses `{tensor.id}` before `{handle}.wait()`: the collective may not have written "
                    f"it yet (on gloo a worker thread writes it; on NCCL the communication stream), so each rank "
                    "reads its own value, the result, or a mix, from run to run"
                )
                fix = f"call `{handle}.wait()` before line {line}, or use `{tensor.id}` only after the wait"
                self._add(call, "read-before-wait", f"{tensor.id} used at line {line}", why, fix, unit)
                return
            if isinstance(statement, (ast.If, ast.For, ast.While, ast.With, ast.Try)):
                return  # what a compound statement runs is not followed

    def _aliased(self, call: ast.Call, name: str, nodes: list[ast.AST], unit: _Unit) -> None:
        """An output list of one tensor repeated (``[torch.zeros_like(t)] * world_size``) handed to an
        all_gather, gather or all_to_all: every slot is the same tensor, so every rank's block is written into
        it and each slot ends up showing the last one (pytorch/pytorch issue #14632, Lightning issue #3253)."""
        if name not in _OUTPUT_LISTS:
            return
        position, word = _OUTPUT_LISTS[name]
        given = _argument(call, position, word)
        built = given
        if isinstance(given, ast.Name):
            bound = [  # a None on the ranks that are not the root is no list
                value
                for value in self._named_values(nodes).get(given.id, [])
                if not (isinstance(value, ast.Constant) and value.value is None)
            ]
            built = bound[0] if len(bound) == 1 else None
        if not (
            isinstance(built, ast.BinOp)
            and isinstance(built.op, ast.Mult)
            and isinstance(built.left, ast.List)
            and len(built.left.elts) == 1
            and not isinstance(built.left.elts[0], ast.Constant)
        ):
            return
        shown = unit.text(built)
        element = unit.text(built.left.elts[0])
        why = (
            f"`{shown}` is one tensor (`{element}`) in every slot, not one per rank: {name} writes each rank's data "
            "into the same tensor, and every slot shows the block written last"
        )
        fix = f"build one tensor per slot: `[{element} for _ in range(...)]`"
        self._add(call, "aliased-outputs", f"{word} = {shown}", why, fix, unit, at=built)

    def _discarded(self, call: ast.Call, name: str, key: str | None, unit: _Unit) -> None:
        """A receiving call whose output is a temporary built in the call (``dist.broadcast_object_list([stats],
        src=0)``, ``dist.broadcast(torch.tensor(flag), src=0)``, ``dist.all_gather([...], t)``): the call writes
        what it receives into that list or tensor, which nothing keeps, so on the receiving ranks the name inside
        still holds its own value (pytorch/pytorch issue #56142: ``stats`` stays None on ranks 1 and 2)."""
        if name not in _RECEIVED_INTO or self._under_rank_test(call, key, unit):
            return  # ``if rank == 0: dist.broadcast_object_list([stats], src=0)``: the source may pass a literal
        position, word = _RECEIVED_INTO[name]
        given = _argument(call, position, word)
        if isinstance(given, (ast.List, ast.ListComp)) and name != "broadcast":
            what = "a list made in the call"
            inner = [e for e in given.elts if isinstance(e, ast.Name)] if isinstance(given, ast.List) else []
        elif isinstance(given, ast.Call) and name == "broadcast" and _dotted(given.func) in _COPYING_TENSORS:
            what = "a tensor made in the call"
            inner = [a for a in given.args[:1] if isinstance(a, ast.Name)]
        else:
            return
        where = self.an.table[key].node if key is not None else unit.tree
        end = call.end_lineno or call.lineno
        read_later = [
            n.id
            for n in ast.walk(where)
            if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Load)
            and n.lineno > end
            and n.id in {i.id for i in inner}
        ]
        if not read_later:
            return  # a call made for its timing or its wait (a lesson's demo): nothing expects the value back
        shown = unit.text(given)
        held = f"`{read_later[0]}` keeps its own value there"
        why = (
            f"{name} writes what it receives into its `{word}`, here {what} (`{shown}`"
            + (", a copy" if name == "broadcast" else "")
            + ") that nothing keeps: on "
            # review81l M2: scatter_object_list's source receives a slice too, and loses it like the others
            + ("every rank but the source" if name.startswith("broadcast") else "every rank")
            + f" {held}, as if the call had not been made, and it is read after the call"
        )
        fix = f"keep it in a name and read the result from it: `out = {shown}`, `dist.{name}(out, ...)`, then use `out`"
        if name == "broadcast_object_list":
            fix = f"`holder = [{read_later[0]}]`, `dist.broadcast_object_list(holder, src=...)`, then `{read_later[0]} = holder[0]`"
        self._add(call, "discarded-output", f"{word} = {shown}", why, fix, unit)

    def _under_rank_test(self, call: ast.Call, key: str | None, unit: _Unit) -> bool:
        return self.an.under_rank_test(call, key, unit)

    # -- a root that is each rank itself

    #: What a self-rooted call did on gloo (measured on 2 and 3 ranks; review46b C3: a reduce is not like a broadcast)
    _SELF_ROOT_ON_GLOO = {
        "broadcast": "on gloo every rank waits until the timeout, or fails at once when a peer that timed out "
        "closes its connection (measured on 2 and 3 ranks; review60b M2)",
        "reduce": "on gloo, for a one-element tensor, rank 0 returns with everyone's data and the other ranks wait "
        "until the timeout, or fail at once when rank 0's process ends; for larger tensors every rank waits until "
        "the timeout (measured on 2 ranks with 1 and 1,000 elements; review50b M1)",
    }

    def _self_root(self, call: ast.Call, name: str, key: str | None, nodes: list[ast.AST], unit: _Unit) -> None:
        """``dist.broadcast(t, src=dist.get_rank())`` (also ``reduce``/``gather``/``scatter`` and the object
        variants): the root must be the same rank on every rank of the group, but here each rank names itself
        (``get_rank()``, ``LOCAL_RANK``, ``args.local_rank``, or a name assigned only from one of those), so every
        rank acts as the root: each keeps or sends its own data, or the call waits for a root that is waiting
        as root too. A loop variable or a parameter is not taken for the rank (``for src in range(world)``)."""
        if name not in _RANK_ARGUMENT:
            return
        word, position = _RANK_ARGUMENT[name]
        root = _argument(call, position, word)
        if root is None or not self._own_rank(root, key):
            return
        if self._under_a_rank_test(call, key, unit):  # ``if src == rank: broadcast(t, src=rank)``: that round's root
            return
        shown = unit.text(root)
        why = (
            f"`{word}={shown}` is this rank's own rank, so it differs on every rank: each rank takes itself for the "
            f"{'source' if word == 'src' else 'destination'} of the {name}, so no rank receives from a root the others "
            f"agree on: {self._SELF_ROOT_ON_GLOO.get(name, 'what each rank then waits for was not measured')}"
        )
        fix = f"pass the same {word} on every rank (a constant such as 0, or a rank every rank computes alike)"
        self._add(call, "self-root", f"{word}={shown}", why, fix, unit)

    def _derived_root(self, call: ast.Call, name: str, key: str | None, nodes: list[ast.AST], unit: _Unit) -> None:
        """``dist.broadcast(t, src=node_rank * per_node)`` on the default group (no ``group=``), with ``src``
        computed from this rank's own global rank (``get_rank()``, ``RANK``, or names and ``self.`` attributes
        assigned from them) by arithmetic: the ranks of one world-wide collective name different roots, and each
        waits for a root of its own (LightLLM PR #986: a node master's broadcast sent to the world
        group). A root given by a parameter, a loop variable or a function is not judged; one under an ``if``
        on the rank is that round's root (``good_broadcast_src_each_round``)."""
        if name not in _RANK_ARGUMENT or key is None:
            return
        word, position = _RANK_ARGUMENT[name]
        root = _argument(call, position, word)
        if root is None or any(k.arg == "group" for k in call.keywords) or len(call.args) > position + 1:
            return
        if self._own_rank(root, key) or not isinstance(root, (ast.Name, ast.Attribute, ast.BinOp)):
            return
        if not self._from_global_rank(root, key, 0):
            return
        if self._under_a_rank_test(call, key, unit):
            return
        shown = unit.text(root)
        why = (
            f"`{word}={shown}` is computed from this rank's own rank, and the {name} has no `group=`: it is one "
            f"collective of the whole world, whose ranks must all name the same {'source' if word == 'src' else 'destination'}. "
            "Ranks that compute different roots each wait for a root of their own: depending on the world size and "
            "the backend's algorithm some calls may return with their own root's data (on gloo with 6 ranks and "
            "roots 0 and 3, ranks 2 and 5 did) while the others wait (on gloo until the timeout, or, when a rank that returned "
            "ends its process, they fail at once); the group as a whole gets no single root's data"
        )
        fix = (
            f"pass the group the root is meant for (`group=` with the global rank of its root), or a {word} every "
            "rank of the world computes alike"
        )
        self._add(call, "different-roots", f"{word}={shown}", why, fix, unit)

    def _chosen_root(self, call: ast.Call, name: str, key: str | None, nodes: list[ast.AST], unit: _Unit) -> None:
        """``dist.broadcast(t, src=0 if rank < 2 else 1)`` on the default group: the root is picked by a test on
        this rank's own rank (``get_rank()``, ``RANK``, ``.local_rank``, or a name assigned from one of those),
        directly, through a name assigned once from such a ternary, or through a name given different constants
        under ``if``s on the rank before the call. The ranks of one world-wide call then name different roots
        (review70b M3; run on 4 ranks, ranks 0 and 2 raised "Connection closed by peer" and ranks 1 and 3
        returned rank 0's tensor). Quiet when both choices are the same, with ``group=``, or under an ``if`` on
        the rank (that round's root)."""
        if name not in _RANK_ARGUMENT:
            return
        word, position = _RANK_ARGUMENT[name]
        root = _argument(call, position, word)
        if root is None or len(call.args) > position + 1:
            return
        group = next((k.value for k in call.keywords if k.arg == "group"), None)
        if group is not None and not (
            (isinstance(group, ast.Constant) and group.value is None) or _terminal(group) == "WORLD"
        ):
            return
        picked = self._rank_pick(root, call, key, nodes)
        if picked is None or self._under_a_rank_test(call, key, unit):
            return
        test, choices = picked
        shown = unit.text(root)
        what = "source" if word == "src" else "destination"
        why = (
            f"`{word}={shown}` is chosen by a test on this rank's own rank (`{test}`), so ranks name different "
            f"roots ({', '.join(choices)}) for one {name} of the whole world (no `group=`), whose ranks must all "
            f"name the same {what}: each rank waits for, or acts as, a root of its own. Run on gloo with 4 ranks "
            "(`src=0 if rank < 2 else 1`), ranks 1 and 3 returned rank 0's tensor and ranks 0 and 2 raised "
            '"Connection closed by peer" once those had ended; with other worlds and sizes ranks can wait until the '
            "timeout"
        )
        fix = (
            f"pass the same {word} on every rank (a constant, or a rank every rank computes alike); if each part "
            f"of the world has its own root, make a group per part on every rank and pass `group=` with it"
        )
        self._add(call, "different-roots", f"{word}={shown}", why, fix, unit)

    def _rank_pick(
        self, root: ast.expr, call: ast.Call, key: str | None, nodes: list[ast.AST]
    ) -> tuple[str, list[str]] | None:
        """(the test's text, the choices' texts) when ``root`` is chosen by a test on this rank's own rank."""
        if isinstance(root, ast.Name) and key is not None:
            func = self.an.table.get(key)
            if func is not None and root.id in {a.arg for a in func.node.args.args}:
                return None
        if isinstance(root, ast.Name):
            value = self.an.values.get(key, {}).get(root.id)
            if isinstance(value, ast.IfExp):
                root = value
        if isinstance(root, ast.IfExp):
            if ast.dump(root.body) == ast.dump(root.orelse) or not self._tests_own_rank(root.test, key):
                return None
            return ast.unparse(root.test), [ast.unparse(root.body), ast.unparse(root.orelse)]
        if not isinstance(root, ast.Name):
            return None
        # `if rank < 2: root = 0` / `else: root = 1` before the call: every assignment a constant, one under a
        # test on the rank
        parents = {id(c): n for n in nodes for c in ast.iter_child_nodes(n)}
        given: list[ast.Assign] = [
            n
            for n in nodes
            if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))
            and root.id
            in {t.id for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)}
        ]
        if not given or any(not isinstance(n, ast.Assign) or not isinstance(n.value, ast.Constant) for n in given):
            return None
        before = [n for n in given if n.lineno < call.lineno]
        values = {repr(n.value.value) for n in before}  # type: ignore[attr-defined]
        if len(before) != len(given) or len(values) < 2:
            return None
        for n in before:
            node: ast.AST = n
            while id(node) in parents:
                node = parents[id(node)]
                if isinstance(node, ast.If) and self._tests_own_rank(node.test, key):
                    return ast.unparse(node.test), sorted(values)
        return None

    def _tests_own_rank(self, test: ast.expr, key: str | None) -> bool:
        """Whether ``test`` reads this rank's own rank (:meth:`_own_rank`), somewhere inside it."""
        return any(
            isinstance(n, (ast.Name, ast.Call, ast.Attribute, ast.Subscript)) and self._own_rank(n, key)
            for n in ast.walk(test)
        )

    def _made_groups(self, body: list[ast.stmt], key: str | None, unit: _Unit, self_class) -> list[ast.Call]:
        """The ``new_group``/``new_subgroups`` calls of ``body`` (not of nested functions), in source order."""
        calls = [
            n
            for n in _own_nodes(body)
            if isinstance(n, ast.Call)
            and _terminal(n.func) in _GROUP_MAKING
            and (found := self.an.classify(n, unit, self_class, key)) is not None
            and found.kind == "coll"
        ]
        return sorted(calls, key=lambda c: (c.lineno, c.col_offset))

    def _groups_under(self, stmts: list[ast.stmt], key: str | None, unit: _Unit, self_class) -> int:
        """``len(self._made_groups(stmts, ...))``, with the count kept per node: an ``elif`` chain's every
        ``else`` holds the rest of the chain (counting each one whole was quadratic in its cases)."""
        counts = self._group_counts
        for root in stmts:
            if id(root) in counts:
                continue
            order, stack = [], [root]
            while stack:
                node = stack.pop()
                if id(node) not in counts:
                    order.append(node)
                    if not isinstance(node, _SCOPES):
                        stack.extend(c for c in ast.iter_child_nodes(node) if not isinstance(c, _SCOPES))
            for node in reversed(order):  # each node after the nodes under it
                own = (
                    isinstance(node, ast.Call)
                    and _terminal(node.func) in _GROUP_MAKING
                    and (found := self.an.classify(node, unit, self_class, key)) is not None
                    and found.kind == "coll"
                )
                inner = () if isinstance(node, _SCOPES) else ast.iter_child_nodes(node)
                counts[id(node)] = int(own) + sum(counts[id(c)] for c in inner if not isinstance(c, _SCOPES))
        return sum(counts[id(root)] for root in stmts)

    def _group_order(self, stmt: ast.If, key: str | None, unit: _Unit, self_class) -> None:
        """``if rank == 0: a = new_group([0, 1]); b = new_group([2, 3])`` / ``else: b = new_group([2, 3]); a =
        new_group([0, 1])``: both sides of a test on the rank make groups, as many, but not the same ones in the
        same order. torch numbers groups by each rank's count of new_group calls and wants every rank to make
        every group in the same order, so the ranks' n-th groups differ (review70b M4: lint saw one new_group
        on each side and said nothing; run on 4 ranks, twice, ranks 1 and 2 stuck in new_group until the
        deadline and the others raised gloo's 2000 ms timeouts). Quiet when both sides make the same calls
        with the same arguments in the same order, or when one is made with ``use_local_synchronization=``
        (each rank may then make its own groups alone)."""
        taint = self.an.func_taint.get(key, set()) if key is not None else self.an.module_taint
        if not stmt.orelse or not self.an.mentions_rank(stmt.test, taint, self.an.laundered.get(key, {})):
            return
        made = self._groups_under(stmt.body, key, unit, self_class)
        if not made or made != self._groups_under(stmt.orelse, key, unit, self_class):
            return
        body = self._made_groups(stmt.body, key, unit, self_class)
        orelse = self._made_groups(stmt.orelse, key, unit, self_class)
        if not body or len(body) != len(orelse):
            return
        if any(k.arg == "use_local_synchronization" for c in body + orelse for k in c.keywords):
            return

        def made(c: ast.Call) -> str:
            return ast.dump(ast.Call(ast.Name(_terminal(c.func)), c.args, c.keywords))

        first = next((i for i, (a, b) in enumerate(zip(body, orelse)) if made(a) != made(b)), None)
        if first is None:
            return
        cond = unit.text(stmt.test)
        here, there = body[first], orelse[first]
        reordered = sorted(map(made, body)) == sorted(map(made, orelse))
        shown, other = unit.text(here), unit.text(there)
        if reordered:
            how = "the same groups in another order"
            seen = (
                "On gloo each new_group waits for its members to connect: run on 4 ranks (rank 0 making [0, 1] "
                "then [2, 3], the others [2, 3] then [0, 1]; twice), ranks waited in new_group until the deadline "
                'and the others raised gloo\'s timeout ("Timed out waiting 2000ms for send operation to complete")'
            )
        else:
            how = "other groups"
            seen = (
                "What follows is not defined: with each rank making only its own group (pytorch/pytorch#130102) "
                "runs hang in new_group or fail in the group's first collective, and some finish by chance"
            )
        why = (
            f"ranks where `{cond}` is true make `{shown}` as their new_group #{first + 1}, the others make "
            f"`{other}` (line {there.lineno + unit.offset}): {how}. torch numbers a group by the rank's count of "
            "new_group calls and wants every rank of the world to make every group, members or not, in the same "
            f"order (its docstring), so the ranks' groups of one number do not match. {seen}"
        )
        fix = (
            f"make every group on every rank, in one order, before the test (`{shown}` and `{other}` on every "
            f"rank, members or not), and use the rank's own group under `{cond}`"
        )
        self._add(here, "branch", cond, why, fix, unit)

    def _reduce_op(self, call: ast.Call, name: str, key: str | None, unit: _Unit) -> None:
        """``dist.all_reduce(t, op=MAX if rank == 0 else SUM)`` (or an ``op`` assigned from a rank-dependent
        expression): a reducing collective (:data:`ops.OPS`'s ``reduces``) whose ``op=`` can differ between the
        ranks of one call. gloo does not check that they agree: every rank finishes, each reducing its share of
        the tensor with its own op (review46b, review64b M4; the diagnosis's ``different-reduce-ops``). Quiet when
        the group is itself rank-dependent (ranks of different groups may use different ops)."""
        if name not in _REDUCING:
            return
        position = _OP_POSITION.get(name)
        given = _argument(call, position, "op") if position is not None else _argument(call, 99, "op")
        if given is None:
            return
        taint = self.an.func_taint.get(key, set()) if key is not None else self.an.module_taint
        laundered = self.an.laundered.get(key, {})
        if not self.an.mentions_rank(given, taint, laundered):
            return
        group = _argument(call, position + 1, "group") if position is not None else _argument(call, 99, "group")
        if group is not None and self.an.mentions_rank(group, taint, laundered):
            return
        shown = unit.text(given)
        why = (
            f"`op={shown}` can differ between ranks, and every rank of one {name} must pass the same op: gloo does "
            "not check that they agree, so every rank finishes with no error and the ranks get one result, but what "
            "it is depends on the tensor's size and each rank's part in the algorithm: one rank's op (the ranks that "
            "passed another get a reduction they did not ask for), neither (a value that is neither the sum nor the "
            "max), or a mix, element by element. It cannot be relied on"
        )
        fix = (
            f"pass the same op on every rank (decide it from a value every rank shares, not from the rank); if "
            f"ranks need different reductions, make one {name} per op on every rank"
        )
        self._add(call, "different-reduce-ops", f"op={shown}", why, fix, unit)

    def _from_global_rank(self, node: ast.expr, key: str, depth: int) -> bool:
        """Whether ``node`` is computed from this rank's own global rank, through the function's names, the
        module's, and ``self.`` attributes assigned once in a method of its class."""
        if depth > 8:
            return False
        if isinstance(node, ast.Call):
            if _terminal(node.func) == "get_rank":
                return not node.args and not node.keywords
            if _terminal(node.func) == "int" and len(node.args) == 1:
                return self._from_global_rank(node.args[0], key, depth + 1)
            return False
        if _env_rank(node):
            key_node = node.slice if isinstance(node, ast.Subscript) else None
            return not (isinstance(key_node, ast.Constant) and "LOCAL" in str(key_node.value))
        if isinstance(node, ast.BinOp):
            return self._from_global_rank(node.left, key, depth + 1) or self._from_global_rank(
                node.right, key, depth + 1
            )
        if isinstance(node, ast.Name):
            func = self.an.table.get(key)
            if func is not None and node.id in {a.arg for a in func.node.args.args}:
                return False
            value = self.an.values.get(key, {}).get(node.id) or self.an.values.get(None, {}).get(node.id)
            return value is not None and self._from_global_rank(value, key, depth + 1)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            cls = self.an._class_of(key)
            found = [
                (func.key, n.value)
                for func in self.an.funcs
                if cls is not None and func.self_class == cls
                for n in _own_nodes(func.node.body)
                if isinstance(n, ast.Assign)
                and len(n.targets) == 1
                and isinstance(n.targets[0], ast.Attribute)
                and n.targets[0].attr == node.attr
                and isinstance(n.targets[0].value, ast.Name)
                and n.targets[0].value.id == "self"
            ]
            return len(found) == 1 and self._from_global_rank(found[0][1], found[0][0], depth + 1)
        return False

    def _under_a_rank_test(self, call: ast.Call, key: str | None, unit: _Unit) -> bool:
        """Whether ``call`` sits under an ``if``/``while``/ternary whose test mentions the rank."""
        scope = self.an.table[key].node if key is not None else unit.tree
        parents = {id(child): node for node in ast.walk(scope) for child in ast.iter_child_nodes(node)}
        node: ast.AST = call
        while id(node) in parents:
            node = parents[id(node)]
            if isinstance(node, (ast.If, ast.IfExp, ast.While)) and self.an.mentions_rank(node.test, set()):
                return True
        return False

    def _own_rank(self, node: ast.expr, key: str | None, depth: int = 0) -> bool:
        if isinstance(node, ast.Call) and _terminal(node.func) in ("get_rank", "get_global_rank_of_self"):
            return not node.args or depth == 0
        if _env_rank(node):
            return True
        if isinstance(node, ast.Attribute) and node.attr in ("local_rank", "process_index", "local_process_index"):
            return True
        if isinstance(node, ast.Name) and depth < 3:
            value = self.an.values.get(key, {}).get(node.id)
            func = self.an.table.get(key) if key is not None else None
            params = {a.arg for a in func.node.args.args} if func is not None else set()
            return value is not None and node.id not in params and self._own_rank(value, key, depth + 1)
        if isinstance(node, ast.Call) and _terminal(node.func) == "int" and node.args:
            return self._own_rank(node.args[0], key, depth + 1)
        return False

    # -- groups the caller is not in

    def _non_member(self, call: ast.Call, name: str, key: str | None, nodes: list[ast.AST], unit: _Unit) -> None:
        """A collective on ``group=g`` that ranks outside ``g`` reach too: torch.distributed warns and returns at
        once on a non-member ("Running barrier on global rank 1 which does not belong to the given group"), so
        the call neither waits nor exchanges anything there. Decided by running the function (and, when the
        group is a parameter, its callers) on sample worlds (see _Ranks): quiet unless some rank provably
        reaches the call with a group that provably does not hold it."""
        if key is None or name not in COLLECTIVES:
            return
        group = next((k.value for k in call.keywords if k.arg == "group"), None)
        if group is None or isinstance(group, ast.Constant) or _terminal(group) == "WORLD":
            return
        stmt = next(
            (
                n
                for n in nodes
                if isinstance(n, (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return))
                and any(c is call for c in ast.walk(n))
            ),
            None,
        )
        if stmt is None:
            return
        witness = _Ranks(self.an, self.an.table[key]).outsider(stmt, group)
        if witness is None:
            return
        world, rank, members = witness
        shown = unit.text(group)
        listed = ", ".join(map(str, sorted(members)[:8])) + (", ..." if len(members) > 8 else "")
        tried = (
            f"run with the world size the file states ({world})"
            if self.an.world_size
            else f"run with {world} ranks (lint tries worlds of {', '.join(map(str, _Ranks.WORLDS[:-1]))} and "
            f"{_Ranks.WORLDS[-1]} ranks; this is the first where it happens)"
        )
        why = (
            f"{tried}, rank {rank} reaches this {name} but is not a member of `{shown}` (ranks "
            f"{listed}): torch.distributed warns and returns at once on a rank outside the group, so there it neither "
            "waits for the members nor exchanges anything; what the call was meant to order or share is not ordered "
            "or shared on that rank"
        )
        fix = f"pass the group this rank belongs to, or call {name} on `{shown}` only where the rank is a member"
        self._add(call, "non-member", f"rank {rank} not in {shown}", why, fix, unit)

    # -- an output list sized by the world for a call on a smaller group

    def _world_sized_list(self, call: ast.Call, name: str, key: str | None, nodes: list[ast.AST], unit: _Unit) -> None:
        """``dist.all_gather_object(out, obj, group=g)`` (also ``all_gather``, ``gather_object``, ``gather``)
        where ``out`` was built with one slot per rank of the *world* (``[None] * dist.get_world_size()``):
        torch sizes the exchange by the group (``get_world_size(group=group)``), so an object list keeps
        ``None`` in the slots past the group's size, and a tensor list of the wrong length fails the call
        (open_clip's ``all_gather_object`` helper on a node group, round 24 of the real-world corpus)."""
        if name not in _GROUP_OUTPUT_LIST:
            return
        word, position, group_position = _GROUP_OUTPUT_LIST[name]
        group = _argument(call, group_position, "group")
        if group is None or (isinstance(group, ast.Constant) and group.value is None):
            return
        if (_dotted(group) or "").endswith(("group.WORLD", "GroupMember.WORLD")):
            return
        if not self._smaller_group(group, key, 0):
            return  # only a group known to be smaller than the world (a helper's group=None is the world)
        given = _argument(call, position, word)
        built = given
        if isinstance(given, ast.Name):
            assigned = _assigned_value(given.id, nodes)
            built = assigned[0] if assigned is not None and assigned[1] is None else None
        size = None
        if isinstance(built, ast.BinOp) and isinstance(built.op, ast.Mult) and isinstance(built.left, ast.List):
            size = built.right
        elif isinstance(built, ast.ListComp) and len(built.generators) == 1:
            over = built.generators[0].iter
            if isinstance(over, ast.Call) and _terminal(over.func) == "range" and len(over.args) == 1:
                size = over.args[0]
        if size is None or not self._world_size(size, nodes):
            return
        shown, group_text = unit.text(given), unit.text(group)
        if name.endswith("_object"):
            outcome = (
                f"torch fills the first `get_world_size({group_text})` slots and leaves the others as they were "
                "(None): code that reads every slot meets them"
            )
        else:
            outcome = "torch checks the list against the group's size, and the call fails"
        why = (
            f"`{shown}` has one slot per rank of the world, but this {name} runs on `{group_text}`, whose size "
            f"torch.distributed uses (`get_world_size(group={group_text})`): {outcome}"
        )
        fix = f"size `{shown}` by the group: `dist.get_world_size(group={group_text})`"
        self._add(call, "size-mismatch", f"{word} sized by the world", why, fix, unit, at=built)

    def _smaller_group(self, group: ast.expr, key: str | None, depth: int) -> bool:
        """Whether ``group`` is known to be a group smaller than the world: made by ``new_subgroups()``
        (``new_subgroups_by_enumeration``), or by ``new_group(ranks)`` with ranks other than every rank, in
        the function or handed to it as an argument by a call of the file (followed through 3 calls)."""
        if isinstance(group, ast.Call):
            made = _terminal(group.func)
            if made in ("new_subgroups", "new_subgroups_by_enumeration"):
                return True
            if made == "new_group":
                ranks = _argument(group, 0, "ranks")
                if ranks is None or (isinstance(ranks, ast.Constant) and ranks.value is None):
                    return False
                over = (
                    ranks.args[0]
                    if isinstance(ranks, ast.Call) and _terminal(ranks.func) == "list" and ranks.args
                    else ranks
                )
                whole = isinstance(over, ast.Call) and _terminal(over.func) == "range" and len(over.args) == 1
                return not (whole and self._world_size(over.args[0], []))
            return False
        if not isinstance(group, ast.Name) or depth > 3:
            return False
        nodes = list(_own_nodes(self.an.table[key].node.body)) if key is not None else []
        assigned = _assigned_value(group.id, nodes)
        if assigned is not None:  # `g = new_group(...)`, or `g, _ = new_subgroups()` (its first element)
            return assigned[1] in (None, 0) and self._smaller_group(assigned[0], key, depth + 1)
        if key is None:
            return False
        func = self.an.table[key]
        names = [a.arg for a in [*func.node.args.posonlyargs, *func.node.args.args]]
        keywords = names + [a.arg for a in func.node.args.kwonlyargs]
        if group.id not in keywords:
            return False
        offset = 1 if func.self_class else 0
        for call in self.an.calls_named(func.node.name):
            given = next((k.value for k in call.keywords if k.arg == group.id), None)
            if given is None and group.id in names and 0 <= names.index(group.id) - offset < len(call.args):
                given = call.args[names.index(group.id) - offset]
            if given is not None and self._smaller_group(given, self.an._enclosing_key(call), depth + 1):
                return True
        return False

    def _world_size(self, node: ast.expr, nodes: list[ast.AST]) -> bool:
        """Whether ``node`` is the world's size: ``get_world_size()`` with no group, or a name of the function
        assigned from it."""
        if isinstance(node, ast.Call):
            return _terminal(node.func) == "get_world_size" and not node.args and not node.keywords
        if isinstance(node, ast.Attribute) and node.attr == "world_size":  # args.world_size, self.world_size
            return True
        if isinstance(node, ast.Name):
            assigned = _assigned_value(node.id, nodes)
            return assigned is not None and assigned[1] is None and self._world_size(assigned[0], [])
        return False

    # -- lists given on the root only

    def _root_only_list(self, call: ast.Call, name: str, key: str | None, nodes: list[ast.AST], unit: _Unit) -> None:
        if name not in _ROOT_ONLY_LIST:
            return
        word, position, root = _ROOT_ONLY_LIST[name]
        given = _argument(call, position, word)
        if given is None or not self._built_everywhere(given, nodes):
            return
        scope = self.an.table[key].node if key is not None else unit.tree
        parents = {id(child): node for node in ast.walk(scope) for child in ast.iter_child_nodes(node)}
        node: ast.AST = call
        while id(node) in parents:  # under any if/while/ternary the list may be the root's only: stay quiet
            node = parents[id(node)]
            if isinstance(node, (ast.If, ast.IfExp, ast.While, ast.Match)):
                return
        shown = unit.text(given)
        at = unit.text(_argument(call, position + 1, root) or ast.Constant(0))
        why = (
            f"`{shown}` is built on every rank, but torch.distributed accepts `{word}` only on the {root} rank "
            f'({root}={at}): every other rank raises ValueError ("Argument ``{_TORCH_WORD.get(word, word)}`` must NOT '
            f'be specified on non-{"destination" if root == "dst" else "source"} ranks.") before sending anything, '
            f"and the {root} rank waits for them until the timeout, or fails at once with a closed connection (gloo) "
            "when their processes end"
        )
        fix = f"pass `{word}={shown} if rank == {at} else None` (build the list on the {root} rank only)"
        self._add(call, "root-only-list", f"{word} on every rank", why, fix, unit)

    @staticmethod
    def _built_everywhere(given: ast.expr, nodes: list[ast.AST]) -> bool:
        """A non-empty list display, a comprehension, ``list(...)``, ``[x] * n``, or a name bound only to those here."""

        def listish(value: ast.AST) -> bool:
            if isinstance(value, ast.List):
                return bool(value.elts)
            if isinstance(value, ast.ListComp):
                return True
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "list":
                return bool(value.args)
            return isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult) and listish(value.left)

        if not isinstance(given, ast.Name):
            return listish(given)
        bound = [
            n.value
            for n in nodes
            if isinstance(n, (ast.Assign, ast.AnnAssign))
            and any(
                isinstance(t, ast.Name) and t.id == given.id
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
            )
        ]
        return bool(bound) and all(v is not None and listish(v) for v in bound)

    # -- group-local ranks

    def _group_rank(self, call: ast.Call, name: str, key: str | None, nodes: list[ast.AST], unit: _Unit) -> None:
        if name not in _RANK_ARGUMENT:
            return
        group = next((k.value for k in call.keywords if k.arg == "group"), None)
        if group is None or (isinstance(group, ast.Constant) and group.value is None) or _terminal(group) == "WORLD":
            return
        word, position = _RANK_ARGUMENT[name]
        rank = _argument(call, position, word)
        if rank is None:
            return
        group_text = unit.text(group)
        evidence = self._group_local(rank, group_text, nodes, unit)
        if evidence is None:
            return
        if key is None:  # review79l M1: a script's top level is no function
            evidence = evidence.replace("the function tests", "the script's top level tests")
        shown = unit.text(rank)
        why = (
            f"`{word}={shown}` is a rank within `{group_text}` ({evidence}), but torch.distributed takes `{word}` as a "
            f"global rank even with `group=`: on a group that does not hold global rank {shown} the call raises "
            '("not part of group") on its members, or picks the wrong rank, while the other ranks wait for them '
            "in their next collective"
        )
        fix = (
            f"pass the global rank: `{word}=dist.get_global_rank({group_text}, {shown})`, or the group rank as "
            f"`group_{word}={shown}` (torch 2.6 and later: pytorch/pytorch#140827 for gather and scatter, #140843 for "
            "broadcast and reduce)"
        )
        cond = f"{word}={shown} with group={group_text}"
        self._add(call, "group-rank", cond, why, fix, unit)

    def _group_local(self, rank: ast.expr, group: str, nodes: list[ast.AST], unit: _Unit) -> str | None:
        """Why ``rank`` is a rank within the group: it is ``get_rank(group)`` (or ``group.rank()``), a name assigned
        from it, or a name the function compares with it."""

        def direct(node: ast.AST, text: Callable[[ast.AST], str]) -> bool:
            if not isinstance(node, ast.Call) or _terminal(node.func) not in ("get_rank", "rank"):
                return False
            if _terminal(node.func) == "rank":
                return isinstance(node.func, ast.Attribute) and text(node.func.value) == group
            args = [*node.args, *(k.value for k in node.keywords if k.arg == "group")]
            return any(text(a) == group for a in args)

        def group_rank(node: ast.AST) -> bool:
            """``dist.get_rank(group)``, or a call of a function of the file that returns it (Megatron's
            ``get_tensor_model_parallel_rank()``)."""
            if direct(node, unit.text):
                return True
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
                return False
            target = self.an._callee(node.func, None, unit)
            func = self.an.table.get(target) if target else None
            if func is None:
                return False
            returns = [n.value for n in _own_nodes(func.node.body) if isinstance(n, ast.Return) and n.value]
            return bool(returns) and all(direct(v, func.unit.text) for v in returns)

        if any(group_rank(n) for n in ast.walk(rank)):
            return f"`{unit.text(rank)}` is dist.get_rank({group})"

        def group_size(node: ast.AST) -> bool:
            """``dist.get_world_size(group)`` or ``group.size()``: a count of the group's members, so a rank
            computed from it (``size - 1``, ``step % size``) is an index within the group (round 39's ART item)."""
            if not isinstance(node, ast.Call) or _terminal(node.func) not in ("get_world_size", "size"):
                return False
            if _terminal(node.func) == "size":
                return isinstance(node.func, ast.Attribute) and unit.text(node.func.value) == group and not node.args
            return any(
                unit.text(a) == group for a in [*node.args, *(k.value for k in node.keywords if k.arg == "group")]
            )

        def of_sizes(node: ast.expr, sized: set[str]) -> bool:
            """``node`` is arithmetic on the group's size and literals alone (``cp_size - 1``), nothing global:
            ``(rank // tp_size) * tp_size`` is Megatron's global rank of the group's first member."""
            if isinstance(node, ast.BinOp):
                return of_sizes(node.left, sized) and of_sizes(node.right, sized)
            if isinstance(node, ast.UnaryOp):
                return of_sizes(node.operand, sized)
            if isinstance(node, ast.Constant):
                return isinstance(node.value, int)
            return (isinstance(node, ast.Name) and node.id in sized) or group_size(node)

        sized = {
            names[0]
            for names, value, index in self._pairs(nodes)
            if index is None and len(names) == 1 and group_size(value)
        }
        if not isinstance(rank, ast.Constant) and of_sizes(rank, sized):
            return f"`{unit.text(rank)}` is computed from the group's size (dist.get_world_size({group})) alone"
        literal = _const_ints(rank)
        if literal is not None and len(literal) == 1:
            if self._holds(group, literal[0], unit):
                return None
            for node in nodes:  # the group's leader test: `if get_rank(group) == 0:` ... `broadcast(src=0)`
                if (
                    isinstance(node, ast.Compare)
                    and len(node.ops) == 1
                    and isinstance(node.ops[0], (ast.Eq, ast.NotEq))
                ):
                    sides = [node.left, node.comparators[0]]
                    if any(_const_ints(x) == literal for x in sides) and any(group_rank(x) for x in sides):
                        return (
                            f"the function tests `{unit.text(node)}` at line {node.lineno + unit.offset}: "
                            f"{literal[0]} is the rank within the group"
                        )
                    if any(_const_ints(x) == literal for x in sides) and any(_names_a_group_rank(x) for x in sides):
                        # verl-project/verl PR #5701 (corpus round 35): `if tp_rank == 0:` fills the object list,
                        # then `broadcast_object_list(..., src=0, group=group)` in every replica's group
                        return (
                            f"the function tests `{unit.text(node)}` at line {node.lineno + unit.offset}: "
                            f"{literal[0]} is a rank within a group there, not a global rank"
                        )
            return None
        if not isinstance(rank, ast.Name):
            return None
        for names, value, index in self._pairs(nodes):
            if rank.id in names and index is None and any(group_rank(n) for n in ast.walk(value)):
                return f"`{rank.id}` is assigned from `{unit.text(value)}`"
        for node in nodes:
            if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Eq, ast.NotEq)):
                sides = [node.left, node.comparators[0]]
                if any(isinstance(x, ast.Name) and x.id == rank.id for x in sides) and any(
                    group_rank(x) for x in sides
                ):
                    return f"the function compares it with dist.get_rank({group}) at line {node.lineno + unit.offset}"
        return None

    def _holds(self, group: str, rank: int, unit: _Unit) -> bool:
        """Whether ``group`` is a name assigned once from ``new_group`` of a literal list that holds ``rank``; or
        one assigned from a parameter (``self.tp_group = tp_group`` in ``__init__``) that every call of the
        function (of the class, for ``__init__``) hands such a group (round 43's SGLang items: the scheduler
        gets the TP group ``new_group(ranks=list(range(dist.get_world_size())))``, which holds every rank)."""
        for key, scope in self.an.values.items():
            value = scope.get(group)
            if isinstance(value, ast.Name) and self._handed_groups_hold(key, value.id, rank):
                return True
            if isinstance(value, ast.Call) and _terminal(value.func) == "new_group" and _group_holds(value, rank):
                return True
        return False

    def _handed_groups_hold(self, key: str | None, param: str, rank: int) -> bool:
        """Whether every call of function ``key`` hands its parameter ``param`` a group that holds ``rank``: a name
        the calling function assigns once from ``new_group`` (see :meth:`_holds`)."""
        func = self.an.table.get(key) if key is not None else None
        if func is None:
            return False
        names = [a.arg for a in [*func.node.args.posonlyargs, *func.node.args.args]]
        if param not in names:
            return False
        offset = 1 if func.self_class else 0
        callee = func.self_class if func.node.name == "__init__" and func.self_class else func.node.name
        calls = self.an.calls_named(callee.rpartition(".")[2])
        if not calls:
            return False
        for call in calls:
            given = next((k.value for k in call.keywords if k.arg == param), None)
            index = names.index(param) - offset
            if given is None and 0 <= index < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args):
                given = call.args[index]
            if not isinstance(given, ast.Name):
                return False
            made = self.an.values.get(self.an._enclosing_key(call), {}).get(given.id)
            if not (isinstance(made, ast.Call) and _terminal(made.func) == "new_group" and _group_holds(made, rank)):
                return False
        return True

    # -- dtypes inferred from per-rank values

    def _dtype(
        self,
        call: ast.Call,
        name: str,
        key: str | None,
        nodes: list[ast.AST],
        unit: _Unit,
        self_class: str | None,
    ) -> None:
        if name not in _TENSOR_ARGUMENT:
            return
        tensor = _argument(call, _TENSOR_ARGUMENT[name], "tensor")
        if not isinstance(tensor, ast.Name):
            return
        made = [v for names, v, i in self._pairs(nodes) if tensor.id in names and i is None]
        if len(made) != 1 or not isinstance(made[0], ast.Call):
            return
        built = made[0]
        if _terminal(built.func) not in ("tensor", "as_tensor") or "torch" not in (_dotted(built.func) or ""):
            return
        if any(k.arg == "dtype" for k in built.keywords) or len(built.args) != 1:
            return
        kinds: list[str] = []
        reason = self._untyped(built.args[0], key, nodes, unit, self_class, kinds)
        if reason is None:
            return
        shown = unit.text(built)
        # review81l M1: name only the dtypes this code can make (the numpy pair picked by the rank test, or an
        # accumulator's int64 / float32 / float64)
        dtypes = (
            f"torch.{_torch_dtype(kinds[0])} on one, torch.{_torch_dtype(kinds[1])} on another"
            if len(kinds) == 2
            else "int64 on one, float32 or float64 on another"
        )
        why = (
            f"`{tensor.id}` is `{shown}` (line {built.lineno + unit.offset}), whose dtype torch infers from the Python "
            f"value: {reason}, so its type, and the tensor's dtype, may differ per rank ({dtypes}): the {name} then "
            "fails on a byte-count mismatch, hangs, or mixes garbage"
        )
        fix = "pin the dtype: `torch.tensor(..., dtype=torch.float64)` (or convert each value with float())"
        self._add(call, "dtype-mismatch", f"dtype of {shown}", why, fix, unit)

    def _untyped(
        self,
        value: ast.expr,
        key: str | None,
        nodes: list[ast.AST],
        unit: _Unit,
        self_class: str | None,
        kinds: list[str] | None = None,
    ) -> str | None:
        """Why the Python type of ``value``'s elements may differ between ranks, or None if lint sees a fixed one.
        An element converted with ``float(...)``, ``int(...)``, ``bool(...)`` or ``complex(...)`` has that type."""
        chosen = self._numpy_choice(value, key, nodes, unit, kinds=kinds)
        if chosen is not None:
            return chosen
        for node in _walk_unconverted(value):
            if isinstance(node, (ast.Name, ast.Attribute)) and not isinstance(getattr(node, "ctx", None), ast.Del):
                written = _dotted(node)
                if written is None:
                    continue
                owner, holder = self_class, written
                if isinstance(node, ast.Attribute) and not written.startswith("self."):
                    # review82l C5: `a.total` of an object of the file's class whose method does `self.total += v`
                    owner = self.an._chain_class(written.rpartition(".")[0], key, self_class)
                    if owner is None:
                        continue
                    holder = f"self.{node.attr}"
                source = self._accumulated(holder, key, nodes, owner)
                if source is not None:
                    return f"`{written}` adds up per-rank values (`{unit.text(source)}`, line {source.lineno + unit.offset})"
        return None

    def _numpy_choice(
        self,
        value: ast.expr,
        key: str | None,
        nodes: list[ast.AST],
        unit: _Unit,
        depth: int = 0,
        kinds: list[str] | None = None,
    ) -> str | None:
        """Why ``value`` holds a numpy value whose type a test on the rank picks: ``np.float32(a) if rank == 0 else
        np.float64(b)``, written in place or assigned once to a name it reads (review79l C5). A numpy call alone is
        not enough: ``np.mean(np.ones(3) * rank)`` is a numpy.float64 on every rank (review79l C4)."""
        picked = kinds
        taint = self.an.func_taint.get(key, set()) if key is not None else self.an.module_taint
        for node in _walk_unconverted(value):
            if isinstance(node, ast.IfExp) and self.an.mentions_rank(node.test, taint, files=False):
                kinds = [_scalar_type(node.body), _scalar_type(node.orelse)]
                if None not in kinds and kinds[0] != kinds[1] and any(k.startswith("numpy.") for k in kinds):
                    if picked is not None:
                        picked[:] = kinds
                    return (
                        f"`{unit.text(node)}` (line {node.lineno + unit.offset}) is a {kinds[0]} on the ranks where "
                        f"`{unit.text(node.test)}` is true and a {kinds[1]} on the others (numpy scalars keep their "
                        "own dtype)"
                    )
            if isinstance(node, ast.Name) and depth < 3:
                assigned = [v for names, v, i in self._pairs(nodes) if node.id in names and i is None]
                if len(assigned) == 1 and assigned[0] is not value:
                    found = self._numpy_choice(assigned[0], key, nodes, unit, depth + 1, picked)
                    if found is not None:
                        return f"`{node.id}`, {found}"
        return None

    def _accumulated(self, written: str, key: str | None, nodes: list[ast.AST], self_class: str | None) -> Any:
        """The ``x += v`` that makes ``written`` an accumulator of values of no fixed type, in its function (or,
        for ``self.x``, in any method of the class)."""
        scopes = [nodes]
        if written.startswith("self.") and self_class:
            scopes = [list(_own_nodes(f.node.body)) for f in self.an.table.values() if f.self_class == self_class]
        for scope in scopes:
            if _starts_as_float(written, scope):
                continue  # `total = 0.0; total += seconds`: a Python float plus a number stays a float (round29)
            for node in scope:
                if (
                    isinstance(node, ast.AugAssign)
                    and isinstance(node.op, ast.Add)
                    and _dotted(node.target) == written
                    and not _typed(node.value)
                ):
                    return node
        return None

    # -- padded batches gathered

    def _padded(self, call: ast.Call, found: _Call, unit: _Unit, nodes: list[ast.AST]) -> None:
        if found.kind != "coll" and found.target not in self.an.reach:
            return
        end = found.target if found.kind == "coll" else " ".join(self.an.chain(found.target))
        if found.kind == "coll" and found.target.startswith("torch.distributed."):
            if found.target.rpartition(".")[2] not in ("all_gather", "all_gather_into_tensor"):
                return
            tensor = _argument(call, 1, "tensor")
        elif found.kind == "coll":
            if _terminal(call.func) not in ("gather", "gather_for_metrics") or "Accelerate" not in found.note:
                return
            tensor = _argument(call, 0, "tensor")
        else:
            if "all_gather" not in end or "all_gather_object" in end:
                return
            tensor = call.args[0] if len(call.args) == 1 and not call.keywords else None
        key = _padded_key(tensor)
        generated = self._generated(tensor, nodes) if key is None else None
        if key is None and generated is None:
            return
        shown = unit.text(tensor)  # type: ignore[arg-type]
        what = (
            f"holds sequences from `{unit.text(generated.func)[:50]}(...)` (line {generated.lineno + unit.offset}), "
            "which stops "
            "when this rank's own sequences end"
            if generated is not None
            else "is a batch of token sequences padded to the batch's own longest one"
        )
        why = (
            f"`{shown}` {what}, so its width may differ per rank, and an all_gather needs the same shape on every "
            "rank: on gloo a rank that receives more bytes than its tensor holds aborts, and another can return "
            "silently with a slot holding wrong values (the sender's bytes in the wrong places, not what it sent), "
            "or wait until the timeout; on NCCL mismatched collectives are undefined behavior, including hangs, "
            "crashes or data corruption (NCCL's user guide, Collective Operations)"
        )
        fix = (
            f"gather what has a fixed shape: the count (`torch.tensor([{shown}.numel()], dtype=torch.int64)`), or "
            "pad to one width on every rank first (accelerator.pad_across_processes, or padding='max_length')"
        )
        if generated is not None:
            fix = (
                f"pad to one width on every rank before gathering: `accelerator.pad_across_processes({shown}, dim=1, "
                "pad_index=tokenizer.pad_token_id)` (or gather the lengths first and pad to their maximum)"
            )
        name = found.display if found.kind == "coll" else " -> ".join((found.display, *self.an.chain(found.target)))
        self._add(call, "size-mismatch", f"shape of {shown}", why, fix, unit, name)

    def _generated(self, tensor: ast.expr | None, nodes: list[ast.AST]) -> ast.Call | None:
        """The ``model.generate(...)`` call a gathered name was last assigned from, above the gather's line and in
        its scope (``tokens = model.generate(...)``; ``tokens = pad_across_processes(tokens)`` in between is the
        fix)."""
        if isinstance(tensor, ast.Call) and _terminal(tensor.func) == "generate":
            return tensor
        if not isinstance(tensor, ast.Name):
            return None
        made = [
            v
            for names, v, i in self._pairs(nodes)
            if tensor.id in names
            and i is None
            and v.lineno <= tensor.lineno
            and not any(n is tensor for n in ast.walk(v))  # not the gather's own assignment
        ]
        last = max(made, key=lambda v: (v.lineno, v.col_offset), default=None)
        if isinstance(last, ast.Call) and _terminal(last.func) == "generate":
            return last
        return None

    def _add(
        self,
        call: ast.Call,
        kind: str,
        cond: str,
        why: str,
        fix: str,
        unit: _Unit,
        name: str | None = None,
        at: ast.AST | None = None,
    ) -> None:
        """A finding about ``call``, shown at the call (the header's ``FILE:LINE: CALL`` names the line that holds
        it, review87l M2); ``at``, the line to change when it is another (the output list built above), is the
        condition's line."""
        if id(call) in self.an.found:
            return
        self.an.found[id(call)] = (
            kind,
            Finding(
                path=self.an.path,
                line=call.lineno + unit.offset,
                col=call.col_offset + unit.indent + 1,
                collective=name or _dotted(call.func) or unit.text(call.func),
                condition=cond,
                kind=kind,
                why=why,
                fix=fix,
                cell=unit.cell,
                condition_line=at.lineno + unit.offset if at is not None and at.lineno != call.lineno else None,
            ),
        )


def _record_finding(
    an: _Analysis,
    node: ast.expr,
    unit: _Unit,
    kind: str,
    condition: str,
    why: str,
    fix: str,
    *,
    key: ast.AST | None = None,
    collective: str | None = None,
    condition_line: int | None = None,
) -> None:
    """Record one finding of a whole-file check at ``node`` (its line, column and, unless ``collective`` is given,
    the call's name), keyed by ``key`` (default ``node``); ``condition_line``: the line of the condition, as the
    file numbers it."""
    an.found[id(node if key is None else key)] = (
        kind,
        Finding(
            path=an.path,
            line=node.lineno + unit.offset,
            col=node.col_offset + unit.indent + 1,
            collective=collective if collective is not None else (_dotted(node.func) or unit.text(node.func)),
            condition=condition,
            kind=kind,
            why=why,
            fix=fix,
            cell=unit.cell,
            condition_line=condition_line,
        ),
    )


#: torch constructors and tensor methods whose result has no autograd history (a loss built with them reaches no
#: parameter, whatever ``requires_grad=`` says).
_FRESH_TENSORS = frozenset({"tensor", "zeros", "ones", "full", "zeros_like", "ones_like", "full_like", "scalar_tensor",
                            "as_tensor", "empty"})  # fmt: skip
_FRESH_METHODS = frozenset({"new_zeros", "new_ones", "new_full", "new_tensor", "new_empty"})
#: What in a file says its backward makes collectives: DDP or FSDP, autograd collectives, gradients all-reduced.
_BACKWARD_COLLECTIVES = re.compile(
    r"DistributedDataParallel|\bDDP\(|FullyShardedDataParallel|fully_shard|distributed\.nn|"
    r"all_reduce\([^)\n]*\.grad\b|DDPStrategy|strategy=\S*ddp"
)


class _DetachedLosses:
    """``detached-loss`` - a function of the file whose result a caller backpropagates (``loss = f(...)``, then
    ``loss.backward()``; or ``f(...).backward()``) returns, under an ``if``, a tensor made from constants
    (``torch.tensor(0.0, requires_grad=True)``, ``torch.zeros(())``, ``x.new_zeros(())``) while its other returns
    come from its inputs, in a file whose backward makes collectives (DDP, FSDP, ``torch.distributed.nn``, an
    all_reduce of ``.grad``). On a rank whose data take that branch the backward reaches no parameter: it makes none
    of those collectives, while the other ranks wait in theirs (Lightning-AI/pytorch-lightning #12190: "if one GPU
    gets a batch like this, it causes the entire training process to hang"; corpus rounds 13 and 35)."""

    def __init__(self, an: _Analysis) -> None:
        self.an = an

    def run(self) -> None:
        if not any(_BACKWARD_COLLECTIVES.search(u.source) for u in self.an.units):
            return
        backpropagated = self._backpropagated()
        for func in self.an.funcs:
            if not func.unit.report or func.node.name not in backpropagated:
                continue
            returns = [n for n in _own_nodes(func.node.body) if isinstance(n, ast.Return) and n.value is not None]
            fresh = [r for r in returns if self._fresh(r.value)]
            if not fresh or len(fresh) == len(returns):
                continue
            parents = {id(c): n for n in ast.walk(func.node) for c in ast.iter_child_nodes(n)}
            inputs = _from_parameters(func)  # the function's data
            for ret in fresh:
                test = self._branch(ret, parents, func.node)
                if test is None or not any(isinstance(n, ast.Name) and n.id in inputs for n in ast.walk(test)):
                    continue  # a branch on the configuration is taken alike on every rank
                self._report(func, ret.value, test, backpropagated[func.node.name])

    def _backpropagated(self) -> dict[str, int]:
        """Names of functions whose result some function of the file calls ``.backward()`` on: name -> line."""
        found: dict[str, int] = {}
        scopes = [(u, list(_own_nodes(u.tree.body))) for u in self.an.units]
        scopes += [(f.unit, list(_own_nodes(f.node.body))) for f in self.an.funcs]
        for unit, nodes in scopes:
            made: dict[str, set[str]] = {}  # a name -> the functions whose results went into it
            assigns = sorted(
                (n for n in nodes if isinstance(n, ast.Assign) and len(n.targets) == 1),
                key=lambda n: (n.lineno, n.col_offset),
            )
            for node in assigns:  # `clip = contrastive_loss(...)`, `loss = ce + 0.5 * clip`
                into = self._into(node.value, made)
                for name in _target_names(node.targets[0]):
                    made[name] = made.get(name, set()) | into
            for node in nodes:
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                    continue
                if node.func.attr != "backward" or node.args:
                    continue
                for name in self._into(node.func.value, made):
                    found.setdefault(name, node.lineno + unit.offset)
        return found

    @staticmethod
    def _into(value: ast.expr, made: dict[str, set[str]]) -> set[str]:
        """The functions whose results ``value`` is computed from: the calls in it (not their arguments' calls,
        which may be inputs only) and what the names in it were made from."""
        into: set[str] = set()
        for node in ast.walk(value):
            if isinstance(node, ast.Call):
                into.add(_terminal(node.func))
            elif isinstance(node, ast.Name):
                into |= made.get(node.id, set())
        return into

    @staticmethod
    def _fresh(value: ast.expr) -> bool:
        if not isinstance(value, ast.Call):
            return False
        name = _terminal(value.func)
        if name in _FRESH_METHODS and isinstance(value.func, ast.Attribute):
            return True
        if name not in _FRESH_TENSORS or _dotted(value.func) not in (f"torch.{name}", name):
            return False
        if name.endswith("_like"):
            return True
        return all(
            isinstance(a, ast.Constant) or (isinstance(a, (ast.Tuple, ast.List)) and not a.elts) for a in value.args
        )

    @staticmethod
    def _branch(node: ast.AST, parents: dict[int, ast.AST], top: ast.AST) -> ast.expr | None:
        while node is not top:
            parent = parents.get(id(node))
            if parent is None:
                return None
            if isinstance(parent, ast.If):
                return parent.test
            node = parent
        return None

    def _report(self, func: _Func, value: ast.Call, test: ast.expr, line: int) -> None:
        unit = func.unit
        if id(value) in self.an.found:
            return
        shown, cond = unit.text(value), unit.text(test)
        why = (
            f"`{func.node.name}` returns `{shown}` when `{cond}`: a tensor made from constants, with no graph behind "
            f"it, so in the backward of line {line} this term reaches no parameter. A rank whose data take this "
            "branch skips the collectives that the term's backward makes on the other ranks (DDP's gradient "
            "all_reduce of the parameters it reaches, an autograd all_gather's), and they wait in theirs until the "
            "timeout or pair them with its next call (Lightning #12190)"
        )
        fix = (
            "return a zero that keeps the graph, built from what the model computed (`logits.sum() * 0.0`), so the "
            "backward reaches every parameter on every rank; or decide on every rank together to skip the step "
            "(all_reduce a flag first)"
        )
        _record_finding(self.an, value, unit, "detached-loss", cond, why, fix)


class _SharedMakes:
    """``every-rank-mkdir`` - a function that runs on every rank (it reaches a collective, or one that does calls
    it, and not only under a rank test) makes a folder whose path is the same on every rank, with
    ``os.makedirs(path)`` or ``Path(path).mkdir()`` without ``exist_ok=True``, or ``os.mkdir(path)``, not under a
    rank test: the first rank to make it succeeds and every other raises FileExistsError, while the ranks that
    succeeded wait for them in their next collective. A check before it (``if not os.path.exists(path):``) is no
    guard: every rank can pass it before any makes the folder (Project-MONAI/MONAI #2374; allennlp #3841; corpus
    rounds 19 and 33)."""

    def __init__(self, an: _Analysis) -> None:
        self.an = an

    def run(self) -> None:
        tops = [f for f in _top_levels(self.an) if _starts_group(f.node.body)]
        if not self.an.reach and not tops:
            return  # no collective in the file: not a program whose ranks lint can tell apart
        for func in [*self.an.funcs, *tops]:
            if not func.unit.report:
                continue
            made = [(c, p) for c in _own_nodes(func.node.body) if isinstance(c, ast.Call) and (p := self._made(c))]
            if not made or not self._on_every_rank(func):  # the call sites are looked up only for a maker
                continue
            taint = self.an.func_taint.get(func.key, set()) if func.key != _TOP else self.an.module_taint
            parents = {id(c): n for n in ast.walk(func.node) for c in ast.iter_child_nodes(n)}
            for call, path in made:
                if self.an.mentions_rank(path, taint, files=False):
                    continue
                if self._guarded(call, parents, func.node, taint):
                    continue
                self._report(func, call, path)

    def _on_every_rank(self, func: _Func) -> bool:
        key = func.key
        if key == _TOP:  # a script whose top level starts the process group: every rank runs it (review79l M1)
            return _starts_group(func.node.body)
        if self.an.called_only_under_rank_test(key):
            return False
        if key in self.an.reach:
            return True
        sites = self.an._call_sites(key)
        if func.node.name == "__init__" and func.self_class:
            sites += self.an._call_sites(func.self_class)
        return any(scope in self.an.reach for _, scope, _ in sites)

    @staticmethod
    def _made(call: ast.Call) -> ast.expr | None:
        """The path ``call`` makes a folder at, when it fails if the folder is there."""
        name = _terminal(call.func)
        exist_ok = next((k.value for k in call.keywords if k.arg == "exist_ok"), None)
        if exist_ok is not None and not (isinstance(exist_ok, ast.Constant) and exist_ok.value is False):
            return None
        if name in ("makedirs", "mkdir") and _dotted(call.func) in (f"os.{name}", name) and call.args:
            if name == "makedirs" and len(call.args) >= 3:
                return None  # exist_ok given by position
            return call.args[0]
        if name == "mkdir" and isinstance(call.func, ast.Attribute) and _dotted(call.func) != "os.mkdir":
            if len(call.args) >= 3:
                return None
            return call.func.value  # Path(...).mkdir(parents=True), self.cache_dir.mkdir()
        return None

    def _guarded(self, call: ast.Call, parents: dict[int, ast.AST], top: ast.AST, taint: set[str]) -> bool:
        """Under an ``if`` (or in a ``try`` whose handler catches FileExistsError or OSError) that a rank test
        decides: a check of the file system is not one."""
        node: ast.AST = call
        while node is not top and id(node) in parents:
            parent = parents[id(node)]
            if isinstance(parent, (ast.If, ast.IfExp)) and node is not parent.test:
                if self.an.mentions_rank(parent.test, taint, files=False):
                    return True
            if isinstance(parent, ast.Try) and node in parent.body:
                for handler in parent.handlers:
                    caught = (
                        {
                            _terminal(t)
                            for t in (handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type])
                        }
                        if handler.type
                        else {"BaseException"}
                    )
                    if caught & {"FileExistsError", "OSError", "Exception", "BaseException", "IOError"}:
                        return True
            node = parent
        return False

    def _report(self, func: _Func, call: ast.Call, path: ast.expr) -> None:
        unit = func.unit
        if id(call) in self.an.found:
            return
        shown = unit.text(path)
        runs = "the script's top level" if func.key == _TOP else f"`{func.key}`"
        why = (
            f"every rank runs {runs} and makes the folder `{shown}`, the same path on every rank, where the "
            "folder must not exist yet: the first rank to make it succeeds and the others raise FileExistsError "
            "(after a check that it is missing, whenever two ranks pass the check before either makes it: "
            "Project-MONAI/MONAI issue #2374), while the first waits for them in its next collective"
        )
        fix = (
            f"pass exist_ok=True (`os.makedirs({shown}, exist_ok=True)`, `.mkdir(parents=True, exist_ok=True)`) on "
            "every rank, or make it on one rank before a barrier the others wait at"
        )
        _record_finding(self.an, call, unit, "every-rank-mkdir", f"{shown} on every rank", why, fix)


class _StoreKeys:
    """``store-key`` - a c10d store read that waits for one key per rank (``store.wait(keys)`` or ``store.get(k)``
    over ``range(world_size)``, torch/distributed/elastic/utils/store.py's ``get_all`` pattern) while the
    ``store.set`` of that key is skipped on some ranks: it sits under a rank-dependent ``if``, or after a
    ``continue``/``break``/``return``/``raise`` whose condition is rank-dependent (an empty shard that "has nothing
    to report"). The waiting rank blocks until the store's timeout (pytorch/pytorch issue #53840), and the other
    ranks wait for it in their next collective. The keys are matched by their f-string shape (``f"{prefix}{r}"``
    read, ``f"{prefix}{rank}"`` set); keys lint cannot compare (built by a helper, from data) are left alone."""

    _READS = frozenset({"wait", "get"})

    def __init__(self, an: _Analysis) -> None:
        self.an = an

    def run(self) -> None:
        sets: list[tuple[str, int, str, ast.Call]] = []  # (template, rank slot, why skipped, call)
        reads: list[tuple[str, int, ast.Call, str, _Unit]] = []
        for func in self.an.funcs:
            nodes = list(_own_nodes(func.node.body))
            taint = self.an.func_taint.get(func.key, set())
            laundered = self.an.laundered.get(func.key)
            parents = {id(c): n for n in ast.walk(func.node) for c in ast.iter_child_nodes(n)}
            for call in (n for n in nodes if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)):
                if "store" not in (_dotted(call.func.value) or "").lower() or not call.args:
                    continue
                if call.func.attr == "set":
                    shape = self._shape(call.args[0], lambda v, t=taint, ld=laundered: self.an.mentions_rank(v, t, ld))
                    skipped = self._skipped(call, parents, func.node, taint, laundered, func.unit)
                    if shape is not None and skipped is not None:
                        sets.append((*shape, skipped, call))
                elif call.func.attr in self._READS and func.unit.report:
                    for shape in self._every_rank_keys(call.args[0], nodes, func.key):
                        reads.append((*shape, call, call.func.attr, func.unit))
        for template, slot, call, attr, unit in reads:
            match = next((s for s in sets if s[0] == template and s[1] == slot), None)
            if match is None or id(call) in self.an.found:
                continue
            _, _, skipped, setter = match
            key = unit.text(call.args[0])
            why = (
                f"`store.{attr}` blocks until the key of every rank exists, but the `store.set` of that key (line "
                f"{setter.lineno + unit.offset}) is skipped on the ranks where {skipped}: every rank that reaches "
                "this wait blocks until the store's timeout (a TCPStore raises DistStoreError, a FileStore a "
                "RuntimeError), and a rank that goes on without it waits for them in its next collective "
                "(review61b M3)"
            )
            fix = (
                "let every rank set its key, whatever its data (publish 0 or an empty value for an empty shard), "
                "or wait only for the keys of the ranks that set one"
            )
            _record_finding(self.an, call, unit, "store-key", f"{key} for every rank", why, fix)

    @staticmethod
    def _shape(key: ast.expr, is_slot: Callable[[ast.expr], bool]) -> tuple[str, int] | None:
        """An f-string key as (its text with every placeholder as ``{}``, the index of the one placeholder that
        ``is_slot``), or None."""
        if not isinstance(key, ast.JoinedStr):
            return None
        parts, slots = [], []
        for part in key.values:
            if isinstance(part, ast.FormattedValue):
                if is_slot(part.value):
                    slots.append(sum(p == "{}" for p in parts))
                parts.append("{}")
            elif isinstance(part, ast.Constant):
                parts.append(str(part.value))
        return ("".join(parts), slots[0]) if len(slots) == 1 else None

    def _every_rank_keys(self, arg: ast.expr, nodes: list[ast.AST], key: str | None) -> list[tuple[str, int]]:
        """Shapes of the keys ``arg`` names for every rank: a comprehension over ``range(world_size)`` (also
        through a name bound once to one), or a key built from the target of such a ``for`` loop."""
        value = arg
        if isinstance(arg, ast.Name):
            value = self.an.values.get(key, {}).get(arg.id, arg)
        if isinstance(value, ast.ListComp) and len(value.generators) == 1:
            gen = value.generators[0]
            if isinstance(gen.target, ast.Name) and not gen.ifs and self._all_ranks(gen.iter):
                name = gen.target.id
                shape = self._shape(value.elt, lambda v: isinstance(v, ast.Name) and v.id == name)
                return [shape] if shape is not None else []
            return []
        if isinstance(value, ast.JoinedStr):
            loops = [
                n
                for n in nodes
                if isinstance(n, ast.For)
                and isinstance(n.target, ast.Name)
                and self._all_ranks(n.iter)
                and any(x is value for x in ast.walk(n))
            ]
            for loop in loops:
                name = loop.target.id  # type: ignore[union-attr]
                shape = self._shape(value, lambda v, n=name: isinstance(v, ast.Name) and v.id == n)
                if shape is not None:
                    return [shape]
        return []

    @staticmethod
    def _all_ranks(it: ast.expr) -> bool:
        """``range(world_size)`` or ``range(0, dist.get_world_size())``: every rank's index."""
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"):
            return False
        if len(it.args) == 2 and not (isinstance(it.args[0], ast.Constant) and it.args[0].value == 0):
            return False
        if len(it.args) not in (1, 2):
            return False
        bound = it.args[-1]
        text = _terminal(bound.func) if isinstance(bound, ast.Call) else _terminal(bound)
        return text in ("get_world_size", "world_size", "num_processes", "nprocs", "num_replicas") or (
            "world" in text.lower()
        )

    def _skipped(
        self,
        call: ast.Call,
        parents: dict[int, ast.AST],
        top: ast.AST,
        taint: set[str],
        laundered: dict[str, int] | None,
        unit: _Unit,
    ) -> str | None:
        """Why some ranks do not reach ``call``: "`test` is false" of a rank-dependent ``if`` whose body holds it
        (true for its ``else``), or "`test` is true" of one before it (in an enclosing block) that leaves; None if
        every rank reaches it as far as lint can see."""
        node: ast.AST = call
        while id(node) in parents and node is not top:
            parent = parents[id(node)]
            if isinstance(parent, ast.If) and node is not parent.test:
                if self.an.mentions_rank(parent.test, taint, laundered):
                    # the call is made in one branch: it is skipped where the test takes the other (review46b C2)
                    return f"`{unit.text(parent.test)}` is {'true' if node in parent.orelse else 'false'}"
            for block in (getattr(parent, f, None) for f in ("body", "orelse", "finalbody")):
                if not isinstance(block, list) or node not in block:
                    continue
                for earlier in block[: block.index(node)]:
                    if isinstance(earlier, ast.If) and self.an.mentions_rank(earlier.test, taint, laundered):
                        if self._leaves(earlier, self._in_loop(parent, parents, top)):
                            line = earlier.lineno + unit.offset
                            return f"`{unit.text(earlier.test)}` is true (the `if` at line {line} leaves first)"
            node = parent
        return None

    @staticmethod
    def _in_loop(node: ast.AST, parents: dict[int, ast.AST], top: ast.AST) -> bool:
        while node is not top and id(node) in parents:
            if isinstance(node, (ast.For, ast.While)):
                return True
            node = parents[id(node)]
        return False

    @staticmethod
    def _leaves(stmt: ast.If, in_loop: bool) -> bool:
        """Whether ``stmt`` holds a ``return``/``raise`` (or, inside a loop, a ``continue``/``break`` of that loop)."""
        stack: list[ast.AST] = list(ast.iter_child_nodes(stmt))
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.Return, ast.Raise)):
                return True
            if in_loop and isinstance(node, (ast.Continue, ast.Break)):
                return True
            if isinstance(node, (ast.For, ast.While)):
                stack += [n for n in ast.walk(node) if isinstance(n, (ast.Return, ast.Raise))]
                continue
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                continue
            stack.extend(ast.iter_child_nodes(node))
        return False


# --------------------------------------------------------------------------- lintgap30: gaps between ranks


def _gap_scopes(
    an: _Analysis,
) -> Iterator[tuple[_Unit, list[ast.stmt], set[str], dict[str, int], str | None, str | None]]:
    """(unit, body, taint, laundered, self class, function key) of every module body and function lint reports on."""
    for unit in an.units:
        if unit.report:
            yield unit, unit.tree.body, an.module_taint, an.laundered.get(None, {}), None, None
    for func in an.funcs:
        if func.unit.report:
            taint = an.func_taint.get(func.key, set())
            yield func.unit, func.node.body, taint, an.laundered.get(func.key, {}), func.self_class, func.key


def _calls_in_order(node: ast.AST) -> Iterator[ast.Call]:
    """The calls of an expression or simple statement in the order they run (arguments before the call that
    takes them), lambdas and nested scopes left out."""
    if isinstance(node, (ast.Lambda, *_SCOPES)):
        return
    for child in ast.iter_child_nodes(node):
        yield from _calls_in_order(child)
    if isinstance(node, ast.Call):
        yield node


#: A group-making call's arguments that may differ between ranks (``use_local_synchronization=True`` lets only the
#: members call it, each member with the same ranks).
_GROUP_SAME_ARGUMENTS_EXEMPT = frozenset({"use_local_synchronization", "timeout", "group_desc"})


_RANK_CALLS = frozenset({"get_rank", "get_local_rank", "get_node_local_rank", "get_group_rank"})


def _rank_sourced(expr: ast.expr, body: list[ast.stmt], params: set[str]) -> bool:
    """Whether ``expr`` is built, through the names the scope assigns, from a reading of this process's rank:
    ``get_rank()``, ``os.environ["RANK"]``, a rank-named parameter or attribute (``rank``, ``args.local_rank``).
    Stricter than :meth:`_Analysis.mentions_rank`: a name of the scope is followed to its values, not judged by
    its own identifier (``by_local_rank = [... for local in range(n)]`` holds the same lists on every rank)."""
    values: dict[str, list[ast.AST]] = {}
    for node in _own_nodes(body):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
            for name in _assigned_names(node):
                values.setdefault(name, []).append(node.value)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            for name in _assigned_names(node):
                values.setdefault(name, []).append(node.iter)
    seen: set[str] = set()
    stack: list[ast.AST] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Call) and _terminal(node.func) in _RANK_CALLS or _env_rank(node):
            return True
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            if node.id in seen:
                continue
            if node.id in values:
                seen.add(node.id)
                stack += values[node.id]
            elif node.id in params and _rank_name(node.id):
                return True
            continue
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and _rank_name(node.attr):
            return True
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            bound = {n.id for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
            for child in ast.walk(node):
                if isinstance(child, ast.Name) and child.id in bound:
                    seen.add(child.id)
        stack.extend(ast.iter_child_nodes(node))
    return False


class _GroupArguments:
    """``group-arguments`` - ``new_group``/``new_subgroups``/``new_subgroups_by_enumeration`` given an argument
    whose value differs between ranks (``ranks = [0, 1] if rank < 2 else [0, 1, 2]; new_group(ranks)``). torch wants
    every rank of the world to make every group, in the same order, with the same ranks (its ``new_group``
    docstring); ranks that pass different lists build groups that do not agree. Quiet with
    ``use_local_synchronization=True`` (then only the members call it; each group's members pass the same list)."""

    def __init__(self, an: _Analysis) -> None:
        self.an = an

    def run(self) -> None:
        for unit, body, taint, laundered, _, key in _gap_scopes(self.an):
            node = self.an.table[key].node if key in self.an.table else None
            params = (
                {a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)} if node else set()
            )
            for call in (n for n in _own_nodes(body) if isinstance(n, ast.Call)):
                if not _dotted(call.func):
                    continue
                full = self.an._resolve(call.func, unit)
                name = full.rpartition(".")[2]
                if name not in _GROUP_MAKING or not full.startswith("torch.distributed"):
                    continue
                local = next((k.value for k in call.keywords if k.arg == "use_local_synchronization"), None)
                if local is not None and not (isinstance(local, ast.Constant) and local.value is False):
                    continue
                given = [*call.args, *(k.value for k in call.keywords if k.arg not in _GROUP_SAME_ARGUMENTS_EXEMPT)]
                ranked = next(
                    (
                        a
                        for a in given
                        if self.an.mentions_rank(a, taint, laundered, files=False) and _rank_sourced(a, body, params)
                    ),
                    None,
                )
                if ranked is None or id(call) in self.an.found:
                    continue
                shown = unit.text(ranked)
                why = (
                    f"`{shown}` differs between ranks, but torch wants every rank of the world to call {name} with "
                    "the same arguments, in the same order (members of the group or not): ranks that pass different "
                    "ranks build groups that do not agree: torch names a group by how many groups the rank made "
                    "before it, not by its members, so each rank's n-th group meets the others' n-th groups in one "
                    "rendezvous whatever ranks they hold, and a rank can wait in the group's creation or its next "
                    "collective until the timeout, fail when a rank it connected to ends its process ('Connection "
                    "reset by peer'), or finish; which rank does which changes from run to run (barrierlab run of "
                    "one such program on 3 and 4 ranks ended each of these ways in different runs), and a list "
                    "naming a rank outside the world raises ValueError at once"
                )
                fix = (
                    f"pass the same {('ranks' if name == 'new_group' else 'arguments')} on every rank (make every "
                    "group on every rank, in one order, and keep the one this rank belongs to), or pass "
                    "use_local_synchronization=True with the same list on every member and call it only on them"
                )
                _record_finding(self.an, call, unit, "group-arguments", f"{shown} differs between ranks", why, fix)


# ----------------------------------------------------------------- lintrecall32b: library calls' agreed arguments


@dataclass(frozen=True)
class AgreedArgument:
    """An argument of a library call that every rank must pass with the same value, because the library decides
    from it which collectives (or how large) the rank makes later, with no collective that would compare the
    ranks' values. ``call``: the call's dotted name as the file's imports resolve it; ``argument``/``position``:
    its keyword and its position; ``decides``: what the library decides from it; ``source``: where it does."""

    library: str
    call: str
    argument: str
    position: int
    decides: str
    source: str
    #: How the object makes its collectives: ``"comm_hook"`` (given to a DDP model's ``register_comm_hook``, so in
    #: its backward), else the name of its method that makes them.
    used_by: str = "comm_hook"


_DDP_HOOKS = "torch.distributed.algorithms.ddp_comm_hooks"
_AVERAGERS = "torch.distributed.algorithms.model_averaging"
_POWER_SGD_SOURCE = "torch 2.13.0 torch/distributed/algorithms/ddp_comm_hooks/powerSGD_hook.py"
#: Library calls with arguments that must agree between ranks. Extend it like FRAMEWORK_COLLECTIVES.
AGREED_ARGUMENTS: tuple[AgreedArgument, ...] = (
    AgreedArgument(
        "torch PowerSGD",
        f"{_DDP_HOOKS}.powerSGD_hook.PowerSGDState",
        "start_powerSGD_iter",
        2,
        "the step from which powerSGD_hook compresses: before it the hook makes one all_reduce of the whole "
        "gradient bucket, from it on an all_reduce of the uncompressed tensors and all_reduces of the low-rank "
        "factors P and Q, so in the steps between the two values the ranks' all_reduces do not pair",
        f"{_POWER_SGD_SOURCE} (powerSGD_hook: 'if state.iter < state.start_powerSGD_iter: ... "
        "_allreduce_fut(group_to_use, input_tensor)')",
    ),
    AgreedArgument(
        "torch PowerSGD",
        f"{_DDP_HOOKS}.powerSGD_hook.PowerSGDState",
        "matrix_approximation_rank",
        1,
        "the width of the low-rank factors P and Q that powerSGD_hook all_reduces, and which tensors it compresses "
        "at all, so the ranks' all_reduces differ in size",
        f"{_POWER_SGD_SOURCE} (_should_compress, powerSGD_hook)",
    ),
    AgreedArgument(
        "torch PowerSGD",
        f"{_DDP_HOOKS}.powerSGD_hook.PowerSGDState",
        "min_compression_rate",
        3,
        "which tensors powerSGD_hook compresses (_should_compress), so the sizes of its all_reduces of the "
        "uncompressed tensors and of the factors",
        f"{_POWER_SGD_SOURCE} (_should_compress)",
    ),
    AgreedArgument(
        "torch post-local SGD",
        f"{_DDP_HOOKS}.post_localSGD_hook.PostLocalSGDState",
        "start_localSGD_iter",
        2,
        "the step from which post_localSGD_hook all_reduces the gradients in the subgroup instead of the global "
        "group, so in the steps between the two values the ranks all_reduce in different groups",
        "torch 2.13.0 torch/distributed/algorithms/ddp_comm_hooks/post_localSGD_hook.py (post_localSGD_hook: "
        "'if state.iter < state.start_localSGD_iter: ... return default._allreduce_fut(global_group_to_use, ...)')",
    ),
    *(
        AgreedArgument(
            "torch model averaging",
            f"{_AVERAGERS}.averagers.PeriodicModelAverager",
            argument,
            position,
            "at which steps average_parameters all_reduces the parameters (from warmup_steps on, every period "
            "steps), so the ranks make different numbers of all_reduces",
            "torch 2.13.0 torch/distributed/algorithms/model_averaging/averagers.py (PeriodicModelAverager."
            "average_parameters: 'if self.step >= self.warmup_steps and (self.step - self.warmup_steps) % "
            "self.period == 0')",
            "average_parameters",
        )
        for argument, position in (("period", 0), ("warmup_steps", 1))
    ),
)


class _AgreedArguments:
    """``agreed-argument`` - a library call of :data:`AGREED_ARGUMENTS` given an argument built from this process's
    rank (through the names of its scope: :func:`_rank_sourced`), unless a helper of the file that returns an
    all-reduced or broadcast value computes it (:meth:`_Analysis._agreeing_call`). Round 25's
    ``buggy_powersgd_start_iter_from_local_shard``: ``start_powerSGD_iter`` counted from the rank's own shards."""

    def __init__(self, an: _Analysis) -> None:
        self.an = an
        self._by_call: dict[str, list[AgreedArgument]] = {}
        for entry in AGREED_ARGUMENTS:
            self._by_call.setdefault(entry.call, []).append(entry)

    def run(self) -> None:
        if not self._by_call:
            return
        for unit, body, taint, laundered, self_class, key in _gap_scopes(self.an):
            node = self.an.table[key].node if key in self.an.table else None
            params = (
                {a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)} if node else set()
            )
            nodes = list(_own_nodes(body))
            for call in (n for n in nodes if isinstance(n, ast.Call)):
                if not _dotted(call.func):
                    continue
                entries = self._by_call.get(self.an._resolve(call.func, unit))
                if not entries:
                    continue
                for entry in entries:
                    given = _argument(call, entry.position, entry.argument)
                    if given is None or not self.an.mentions_rank(given, taint, laundered, files=False):
                        continue
                    if not _rank_sourced(given, body, params):
                        continue
                    if self.an._agreeing_call(given, self_class, unit, key):
                        continue
                    self._report(call, given, entry, unit, nodes, key)
                    break

    def _user(self, built: ast.Call, entry: AgreedArgument, unit: _Unit, nodes: list[ast.AST], key: str | None):
        """The call of the scope where the object ``built`` makes the collectives ``entry`` speaks of: the first
        DDP backward after ``register_comm_hook(state, ...)`` was given it, or the first call of its
        ``entry.used_by`` method; None when the scope shows neither."""
        names = {
            t.id
            for n in nodes
            if isinstance(n, ast.Assign) and n.value is built
            for t in n.targets
            if isinstance(t, ast.Name)
        }

        def holds(value: ast.expr | None) -> bool:
            return value is built or (isinstance(value, ast.Name) and value.id in names)

        calls = sorted(
            (n for n in nodes if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)),
            key=lambda c: (c.lineno, c.col_offset),
        )
        if entry.used_by != "comm_hook":
            return next(
                (c for c in calls if c.func.attr == entry.used_by and holds(c.func.value)),  # type: ignore[attr-defined]
                None,
            )
        registered = next(
            (
                c
                for c in calls
                if c.func.attr == "register_comm_hook"  # type: ignore[attr-defined]
                and holds(_argument(c, 0, "state"))
            ),
            None,
        )
        if registered is None:
            return None
        for call in calls:
            if call.lineno <= registered.lineno:
                continue
            found = self.an._ddp_op(call, unit, key)
            if found is not None and found.target == "ddp.backward":
                return call
        return None

    def _report(
        self, call: ast.Call, given: ast.expr, entry: AgreedArgument, unit: _Unit, nodes: list[ast.AST], key
    ) -> None:
        shown = unit.text(given)
        name = entry.call.rpartition(".")[2]
        user = self._user(call, entry, unit, nodes, key)
        where = f"{name}(...) at line {call.lineno + unit.offset}"
        why = (
            f"`{entry.argument}={shown}` given to {where} is computed from this rank's own values (its rank, or data "
            f"chosen by it), so it can differ between ranks; {entry.argument} decides {entry.decides}, and nothing "
            f"in {entry.library} compares the ranks' values first ({entry.source})"
        )
        fix = (
            f"give {entry.argument} a value every rank shares: a constant or config value, or agree on it first "
            f"(all_reduce the per-rank numbers with MIN or MAX, or broadcast rank 0's) before building {name}"
        )
        target = user if user is not None and id(user) not in self.an.found else call
        if id(target) in self.an.found:
            return
        if target is not call:
            made = (
                "this backward runs the DDP comm hook given that state"
                if entry.used_by == "comm_hook"
                else f"this {entry.used_by}() makes the collectives of that {name}"
            )
            why = f"{made}: {why}"
        _record_finding(
            self.an,
            target,
            unit,
            "agreed-argument",
            f"{entry.argument}={shown} differs between ranks",
            why,
            fix,
            collective=(
                f"{unit.text(target.func)}() ({name} with {entry.argument} from this rank)"
                if target is not call
                else f"{name}({entry.argument}=...)"
            ),
            condition_line=call.lineno + unit.offset if target is not call and call.lineno < target.lineno else None,
        )


# ------------------------------------------------ lintrecall32b: a module changed on some ranks before DDP wraps it

_DDP_SOURCE = (
    "torch 2.13.0 torch/nn/parallel/distributed.py (DistributedDataParallel.__init__: _build_params_for_reducer keeps "
    "the parameters with requires_grad, then _verify_param_shape_across_processes and _sync_module_states) and "
    "torch/distributed/utils.py (_sync_module_states broadcasts module.named_parameters() and named_buffers() from "
    "rank 0, coalesced)"
)
#: Library decorators that run the function on some ranks only and return None on the others (sources in
#: :meth:`_Analysis._seed_gated_returns`): lightning_utilities' rank_zero_only, mmcv/mmengine's master_only,
#: Accelerate's on_main_process/on_local_main_process.
_GATING_DECORATOR_NAMES = frozenset({"rank_zero_only", "master_only", "on_main_process", "on_local_main_process"})
#: torch.nn layers whose first two positional arguments (or these keywords) are sizes of their parameters.
_SIZED_LAYERS = frozenset(
    {
        "Linear", "Bilinear", "Embedding", "EmbeddingBag", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d",
        "ConvTranspose2d", "ConvTranspose3d", "LayerNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "GroupNorm",
        "LSTM", "GRU", "RNN", "MultiheadAttention", "SyncBatchNorm", "RMSNorm",
    }
)  # fmt: skip
_SIZE_KEYWORDS = frozenset(
    {
        "in_features", "out_features", "num_embeddings", "embedding_dim", "in_channels", "out_channels",
        "normalized_shape", "num_features", "input_size", "hidden_size", "embed_dim", "num_channels", "num_groups",
    }
)  # fmt: skip


def _root_name(node: ast.AST) -> str | None:
    """The name an attribute/subscript/call chain starts from (``net`` of ``net[0].fit`` and of
    ``model.backbone.parameters()``), or None."""
    for _ in range(_MAX_CHAIN):
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        else:
            return None
    return None


class _DivergedModule:
    """``diverged-module`` - a module changed under an ``if`` on the rank before ``DDP(module)`` wraps it, in a way
    that DDP's constructor does not repair: which of its parameters require grad (``p.requires_grad_(False)``
    over its ``parameters()``, directly or in a function of the file handed the module), or which buffers it
    holds (a method of a module class of the file that assigns a tensor to a buffer its ``__init__`` registered as
    ``None``). DDP builds its parameter list from the parameters that require grad, checks it across the ranks
    and broadcasts rank 0's parameters and buffers: ranks whose modules differ fail the check or their broadcasts
    do not pair. Round 20's ``buggy_freeze_after_rank0_load`` and round 19's
    ``buggy_normalizer_lazy_buffers_rank0_fit``. The value changes DDP does repair (weights loaded on rank 0, a
    buffer allocated in ``__init__`` and filled on rank 0) are quiet."""

    def __init__(self, an: _Analysis) -> None:
        self.an = an
        self._freezers: dict[tuple[str, int], str | None] = {}
        self._buffer_methods: dict[str, tuple[str, str] | None] | None = None
        self._origins: list[ast.AST] = []

    def run(self) -> None:
        for unit, body, taint, laundered, _self_class, _key in _gap_scopes(self.an):
            nodes = list(_own_nodes(body))
            wraps = [
                n
                for n in nodes
                if isinstance(n, ast.Call)
                and n.args
                and isinstance(n.args[0], (ast.Name, ast.Call))
                and _dotted(n.func)
                and self.an._wrapper_kind(n, unit) == "ddp"
            ]
            if not wraps:
                continue
            ifs = [
                n
                for n in nodes
                if isinstance(n, ast.If) and self.an.mentions_rank(n.test, taint, laundered, files=False)
            ]
            for wrap in wraps:
                self._built_apart(wrap, nodes, taint, laundered, unit)
                if not isinstance(wrap.args[0], ast.Name):
                    continue
                module = wrap.args[0].id
                for stmt in ifs:
                    if (stmt.end_lineno or stmt.lineno) >= wrap.lineno:
                        continue
                    taken = self._change(stmt.body, module, 0)
                    other = self._change(stmt.orelse, module, 0)
                    if (taken is None) == (other is None):
                        continue  # neither branch changes it, or both do (unknown whether alike)
                    change, what = taken or other  # type: ignore[misc]
                    self._report(wrap, stmt, change, what, module, unit, taken is None)
                    break

    def _built_apart(self, wrap: ast.Call, nodes: list[ast.AST], taint: set[str], laundered, unit: _Unit) -> None:
        """``DDP(Cls(n))`` (or ``m = Cls(n)`` ... ``DDP(m)``) where ``n`` differs between ranks and ``Cls`` (a module
        class of the file, or a torch.nn layer) passes it as a size to a torch.nn layer: the ranks' parameters have
        different shapes when DDP's constructor checks them."""
        built = wrap.args[0]
        if isinstance(built, ast.Name):
            made = [
                n
                for n in nodes
                if isinstance(n, ast.Assign)
                and isinstance(n.value, ast.Call)
                and n.lineno < wrap.lineno
                and any(isinstance(t, ast.Name) and t.id == built.id for t in n.targets)
            ]
            built = made[-1].value if made else None  # type: ignore[assignment]
        if not isinstance(built, ast.Call) or not _dotted(built.func):
            return
        for arg in [*built.args, *(k.value for k in built.keywords)]:
            if not self.an.mentions_rank(arg, taint, laundered, files=False):
                continue
            if not self._proved_ranked(arg, nodes):
                continue  # "may differ" is not enough here: a helper handed the rank may return what all share
            layer = self._sized_by(built, arg, unit)
            if layer is None:
                continue
            origin = self._assigned_line(arg, nodes, built.lineno)
            self._origins = [n for n in nodes if isinstance(n, (ast.Assign, ast.AnnAssign))]
            self._report_sizes(wrap, built, arg, layer, origin, unit)
            return

    def _proved_ranked(self, expr: ast.expr, nodes: list[ast.AST]) -> bool:
        """Whether ``expr`` is built, through the scope's assignments and plain builtins only, from a reading of
        the rank (``get_rank()``, a rank-named name) or from the call of a function under a decorator that runs it
        on some ranks only (``@rank_zero_only``: the default elsewhere). Any other call leaves it unknown."""
        values: dict[str, list[ast.AST]] = {}
        for node in nodes:
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                for name in _assigned_names(node):
                    values.setdefault(name, []).append(node.value)
        seen: set[str] = set()
        stack: list[ast.AST] = [expr]
        while stack:
            node = stack.pop()
            if isinstance(node, ast.Call):
                called = _terminal(node.func)
                if called in _RANK_CALLS or (isinstance(node.func, ast.Name) and called in self.an.gated_returns):
                    return True
                if not (isinstance(node.func, ast.Name) and called in _PLAIN_BUILTINS):
                    continue  # another call's result: unknown
                stack += [*node.args, *(k.value for k in node.keywords)]
                continue
            if isinstance(node, ast.Name):
                if node.id in values and node.id not in seen:
                    seen.add(node.id)
                    stack += values[node.id]
                elif node.id not in values and _rank_name(node.id):
                    return True
                continue
            if isinstance(node, ast.Attribute) and _rank_name(node.attr):
                return True
            stack.extend(ast.iter_child_nodes(node))
        return False

    def _sized_by(self, built: ast.Call, arg: ast.expr, unit: _Unit) -> str | None:
        """The torch.nn layer call (as written) that takes ``arg`` of ``built`` as one of its sizes, or None."""
        full = self.an._resolve(built.func, unit)
        if full.startswith("torch.nn.") and full.rpartition(".")[2] in _SIZED_LAYERS:
            return unit.text(built) if arg in built.args[:2] else None
        cls = _terminal(built.func)
        init = self.an.table.get(f"{cls}.__init__")
        if cls not in self.an.class_nodes or init is None:
            return None
        names = [a.arg for a in (*init.node.args.posonlyargs, *init.node.args.args)][1:]
        if arg in built.args:
            position = built.args.index(arg)
            if position >= len(names):
                return None
            param = names[position]
        else:
            param = next((k.arg for k in built.keywords if k.value is arg), None)
        if param is None:
            return None
        for node in _own_nodes(init.node.body):
            if not (isinstance(node, ast.Call) and _dotted(node.func)):
                continue
            if self.an._resolve(node.func, init.unit).startswith("torch.nn.") and (
                _terminal(node.func) in _SIZED_LAYERS
            ):
                sizes = [*node.args[:2], *(k.value for k in node.keywords if k.arg in _SIZE_KEYWORDS)]
                if any(isinstance(n, ast.Name) and n.id == param for s in sizes for n in ast.walk(s)):
                    return init.unit.text(node)
        return None

    @staticmethod
    def _assigned_line(arg: ast.expr, nodes: list[ast.AST], before: int) -> int | None:
        if not isinstance(arg, ast.Name):
            return None
        lines = [
            n.lineno
            for n in nodes
            if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.lineno <= before and arg.id in _assigned_names(n)
        ]
        return max(lines) if lines else None

    def _report_sizes(
        self, wrap: ast.Call, built: ast.Call, arg: ast.expr, layer: str, origin: int | None, unit: _Unit
    ) -> None:
        if id(wrap) in self.an.found:
            return
        shown = unit.text(arg)
        layer = layer if len(layer) <= 60 else layer[:57] + "..."
        made = unit.text(built)
        made = made if len(made) <= 50 else f"{_dotted(built.func)}(...)"
        where = f" (assigned at line {origin + unit.offset})" if origin is not None else ""
        gated = next(
            (
                (n.id, self.an.gated_returns[n.id])
                for n in ast.walk(arg)
                if isinstance(n, ast.Name) and n.id in self.an.gated_returns
            ),
            None,
        )
        if gated is None and isinstance(arg, ast.Name) and origin is not None:
            gated = next(
                (
                    (c.func.id, self.an.gated_returns[c.func.id])
                    for n in self._origins
                    if n.lineno == origin
                    for c in ast.walk(n)
                    if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id in self.an.gated_returns
                ),
                None,
            )
        if gated is not None:
            where += (
                f" (`{gated[0]}` runs only on the ranks its decorator `@{gated[1]}` lets through and returns on the "
                "others: None)"
            )
        why = (
            f"`{shown}`{where} differs between ranks and `{made}` passes it as a size to `{layer}`, so the ranks' "
            f"modules have parameters of different shapes when `{unit.text(wrap.func)}(...)` wraps it; DDP's "
            "constructor checks the parameters' count and shapes against the other ranks' and broadcasts rank 0's "
            f"parameters and buffers, so it fails on some ranks while the others wait in it ({_DDP_SOURCE})"
        )
        fix = (
            f"build the module from a size every rank shares: compute `{shown}` on every rank, or broadcast rank 0's "
            "value (broadcast_object_list) before building the module"
        )
        _record_finding(
            self.an,
            wrap,
            unit,
            "diverged-module",
            f"{shown} differs between ranks",
            why,
            fix,
            collective=f"{_dotted(wrap.func)}({made}) (DDP construction)",
            condition_line=origin + unit.offset if origin is not None else None,
        )

    def _change(self, stmts: list[ast.stmt], module: str, depth: int) -> tuple[ast.AST, str] | None:
        """The first statement part of ``stmts`` that changes the module ``module`` names in a way DDP checks or
        broadcasts, with what it changes; None when none does."""
        params = {
            name
            for loop in _own_nodes(stmts)
            if isinstance(loop, (ast.For, ast.AsyncFor))
            and _root_name(loop.iter) == module
            and _terminal(loop.iter.func if isinstance(loop.iter, ast.Call) else loop.iter)
            in ("parameters", "named_parameters")
            for name in _target_names(loop.target)
        }
        for node in _own_nodes(stmts):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if node.func.attr == "requires_grad_" and _root_name(node.func.value) in params | {module}:
                    return node, "which parameters of `{m}` require grad"
                if _root_name(node.func.value) == module:
                    buffer = self._buffer_method(node.func.attr)
                    if buffer is not None:
                        return (
                            node,
                            f"whether `{{m}}` holds the buffer `{buffer[1]}` ({buffer[0]} registers it as None)",
                        )
            if isinstance(node, (ast.Assign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(
                    isinstance(t, ast.Attribute)
                    and t.attr == "requires_grad"
                    and _root_name(t.value) in params | {module}
                    for t in targets
                ):
                    return node, "which parameters of `{m}` require grad"
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and depth < 3:
                func = self.an.table.get(node.func.id)
                if func is None or func.self_class is not None:
                    continue
                names = [a.arg for a in (*func.node.args.posonlyargs, *func.node.args.args)]
                for position, arg in enumerate(node.args):
                    if _root_name(arg) != module or position >= len(names):
                        continue
                    cached = (func.key, position)
                    if cached not in self._freezers:
                        self._freezers[cached] = None
                        inner = self._change(func.node.body, names[position], depth + 1)
                        self._freezers[cached] = inner[1] if inner is not None else None
                    if self._freezers[cached] is not None:
                        return node, self._freezers[cached]  # type: ignore[return-value]
        return None

    def _buffer_method(self, name: str) -> tuple[str, str] | None:
        """(class, buffer) when every class of the file with a method ``name`` is one whose ``name`` assigns a tensor
        to a buffer the class registered as ``None`` in ``__init__`` (``register_buffer("mean", None)``, then
        ``self.mean = x.mean(0)``): Module.__setattr__ keeps it a buffer, so the module gains it there."""
        if self._buffer_methods is None:
            self._buffer_methods = {}
            found: dict[str, list[tuple[str, str] | None]] = {}
            for func in self.an.table.values():
                cls = func.self_class
                if cls is None or func.node.name == "__init__" or func.key != f"{cls}.{func.node.name}":
                    continue
                empty = self._none_buffers(cls)
                assigned = next(
                    (
                        t.attr
                        for n in _own_nodes(func.node.body)
                        if isinstance(n, ast.Assign)
                        and not (isinstance(n.value, ast.Constant) and n.value.value is None)
                        for t in n.targets
                        if isinstance(t, ast.Attribute)
                        and isinstance(t.value, ast.Name)
                        and t.value.id == "self"
                        and t.attr in empty
                    ),
                    None,
                )
                found.setdefault(func.node.name, []).append((cls, assigned) if assigned else None)
            for method, held in found.items():
                self._buffer_methods[method] = held[0] if len(held) == 1 and held[0] is not None else None
        return self._buffer_methods.get(name)

    def _none_buffers(self, cls: str) -> set[str]:
        init = self.an.table.get(f"{cls}.__init__")
        if init is None:
            return set()
        return {
            n.args[0].value
            for n in _own_nodes(init.node.body)
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "register_buffer"
            and isinstance(n.func.value, ast.Name)
            and n.func.value.id == "self"
            and len(n.args) >= 2
            and isinstance(n.args[0], ast.Constant)
            and isinstance(n.args[0].value, str)
            and isinstance(n.args[1], ast.Constant)
            and n.args[1].value is None
        }

    def _report(
        self, wrap: ast.Call, stmt: ast.If, change: ast.AST, what: str, module: str, unit: _Unit, in_else: bool
    ) -> None:
        if id(wrap) in self.an.found:
            return
        test = unit.text(stmt.test)
        cond = f"not ({test})" if in_else else test
        shown = unit.text(change)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        wrapped = unit.text(wrap)
        wrapped = wrapped if len(wrapped) <= 40 else f"{_dotted(wrap.func)}({module})"
        why = (
            f"`{shown}` (line {change.lineno + unit.offset}) changes {what.format(m=module)} only on the ranks where "
            f"`{cond}` holds, before `{wrapped}` wraps it; DDP's constructor builds its parameter list from the "
            "parameters that require grad, checks it against the other ranks' (count and shapes) and broadcasts "
            "rank 0's parameters and buffers, so ranks whose modules differ fail that check or their broadcasts do "
            f"not match in size, and the others wait in it ({_DDP_SOURCE})"
        )
        fix = (
            f"make the same change to `{module}` on every rank before wrapping it (load and freeze on every rank, or "
            "broadcast whether the rank-0 step succeeded and decide on every rank), or allocate the buffer in "
            "__init__ with its shape (register_buffer(name, torch.zeros(...))) and fill it in place: DDP then "
            "broadcasts rank 0's values"
        )
        _record_finding(
            self.an,
            wrap,
            unit,
            "diverged-module",
            cond,
            why,
            fix,
            collective=f"{_dotted(wrap.func)}({module}) (DDP construction)",
            condition_line=stmt.lineno + unit.offset,
        )


# --------------------------------------- lintrecall32b: a DDP comm hook that decides its collectives on the bucket

#: GradBucket methods that hand back this rank's own (not yet reduced) gradients: their values differ between ranks.
_BUCKET_DATA = frozenset({"buffer", "gradients", "get_tensor", "get_tensors"})
#: What a test may read of the bucket's tensors without reading their values (the same on every rank).
_BUCKET_SHAPES = frozenset({"numel", "shape", "size", "dtype", "device", "dim", "ndim", "nelement", "is_cuda"})


class _CommHookGate:
    """``branch`` - a DDP communication hook of the file (given to ``register_comm_hook``) whose collectives depend
    on a test of the gradients in its bucket (``if not torch.any(bucket.buffer()): return`` before the
    all_reduce). DDP runs the hook in each rank's backward on that rank's own bucket before anything reduced it, so
    the values differ between ranks (a parameter unused on one rank has zero gradients there): some ranks make the
    hook's collective for that bucket and the others do not, and the next ones pair different buckets. Round 17's
    ``buggy_comm_hook_skips_zero_bucket``. Tests of the bucket's size, dtype, index or ``is_last()`` are quiet."""

    def __init__(self, an: _Analysis) -> None:
        self.an = an

    def run(self) -> None:
        done: set[str] = set()
        for unit, body, _taint, _laundered, self_class, key in _gap_scopes(self.an):
            for call in (n for n in _own_nodes(body) if isinstance(n, ast.Call)):
                if not (isinstance(call.func, ast.Attribute) and call.func.attr == "register_comm_hook"):
                    continue
                hook = _argument(call, 1, "hook")
                if not isinstance(hook, (ast.Name, ast.Attribute)):
                    continue
                target = self.an._hook_function(hook, unit, self_class, key)
                if target is None or target in done or target not in self.an.table:
                    continue
                done.add(target)
                self._hook(self.an.table[target], call, unit)

    def _hook(self, func: _Func, registered: ast.Call, unit: _Unit) -> None:
        params = [a.arg for a in (*func.node.args.posonlyargs, *func.node.args.args)]
        if func.self_class is not None and params and params[0] in ("self", "cls"):
            params = params[1:]
        if len(params) < 2:
            return
        bucket = params[1]
        own = list(_own_nodes(func.node.body))
        data: set[str] = set()
        for _ in range(4):
            grown = False
            for names, value, _line in _assignments(own):
                if value is not None and self._reads_data(value, bucket, data):
                    for name in names:
                        if name not in data:
                            data.add(name)
                            grown = True
            if not grown:
                break
        for stmt in own:
            if not isinstance(stmt, ast.If) or not self._reads_data(stmt.test, bucket, data):
                continue
            taken = self._collectives(stmt.body, func)
            other = self._collectives(stmt.orelse, func)
            if stmt.body and isinstance(stmt.body[-1], (ast.Return, ast.Raise)):
                other = other + self._after(stmt, func)
            if len(taken) == len(other):
                continue
            call, found = (taken or other)[0]
            self._report(func, stmt, call, found, registered, unit)
            return

    def _reads_data(self, expr: ast.AST, bucket: str, data: set[str]) -> bool:
        """Whether ``expr`` reads the values of the bucket's gradients (not only their sizes or dtype)."""
        stack: list[ast.AST] = [expr]
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.Lambda, *_SCOPES)):
                continue
            if isinstance(node, ast.Attribute) and node.attr in _BUCKET_SHAPES:
                continue  # ``buf.numel()``, ``buf.shape``: the same on every rank
            if isinstance(node, ast.Call) and _terminal(node.func) == "len":
                continue
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in _BUCKET_DATA
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == bucket
            ):
                return True
            if isinstance(node, ast.Name) and node.id in data:
                return True
            stack.extend(ast.iter_child_nodes(node))
        return False

    def _collectives(self, stmts: list[ast.stmt], func: _Func) -> list[tuple[ast.Call, _Call]]:
        out = []
        for node in _own_nodes(stmts):
            if isinstance(node, ast.Call):
                found = self.an.classify(node, func.unit, func.self_class, func.key)
                if found is not None and found.kind == "coll":
                    out.append((node, found))
        return sorted(out, key=lambda pair: (pair[0].lineno, pair[0].col_offset))

    def _after(self, stmt: ast.If, func: _Func) -> list[tuple[ast.Call, _Call]]:
        """The collectives of the statements after ``stmt`` in the block that holds it."""
        for node in [func.node, *_own_nodes(func.node.body)]:
            for part in ("body", "orelse", "finalbody"):
                block = getattr(node, part, None)
                if isinstance(block, list) and stmt in block:
                    return self._collectives(block[block.index(stmt) + 1 :], func)
        return []

    def _report(
        self, func: _Func, stmt: ast.If, call: ast.Call, found: _Call, registered: ast.Call, unit: _Unit
    ) -> None:
        if id(call) in self.an.found:
            return
        test = func.unit.text(stmt.test)
        shown = found.display if hasattr(found, "display") else (_dotted(call.func) or func.unit.text(call.func))
        why = (
            f"`{func.node.name}` is the DDP communication hook registered at line {registered.lineno + unit.offset}: "
            "DDP runs it in each rank's backward on that rank's own gradient bucket, before anything has reduced it, "
            f"and `{test}` reads those gradients, which differ between ranks (a parameter unused on one rank has "
            f"zero gradients there), so some ranks make `{shown}` for this bucket and the others do not, and the "
            "next collectives pair different buckets (torch 2.13.0 torch/distributed/algorithms/ddp_comm_hooks/"
            "default_hooks.py: allreduce_hook all-reduces every bucket)"
        )
        fix = (
            "decide the hook's collectives on what every rank shares (the bucket's index, size or is_last()), not on "
            "its values: all-reduce every bucket, zeros included, or all-reduce a flag first and skip only when "
            "every rank agrees"
        )
        _record_finding(
            self.an,
            call,
            func.unit,
            "branch",
            test,
            why,
            fix,
            collective=shown,
            condition_line=stmt.lineno + func.unit.offset,
        )


# --------------------------------------- lintrecall32b: parameters unfrozen after DDP built its reducer without them


class _UnfrozenAfterWrap:
    """``unfrozen-after-wrap`` - parameters of a module frozen before ``DDP(module)`` wraps it and set to require
    grad again after (``p.requires_grad_(True)`` over its ``parameters()``): DDP's constructor registered its
    gradient reduction only for the parameters that required grad then (``_build_params_for_reducer``), and its
    docstring says no parameter may be added or changed after the wrap, so the unfrozen parameters' gradients are
    never all-reduced and each rank's copy drifts on its own data. Round 19's
    ``buggy_unfreeze_backbone_after_ddp_wrap``. Quiet when the parameters were not frozen before the wrap in the
    same function (unfreezing what requires grad already changes nothing)."""

    def __init__(self, an: _Analysis) -> None:
        self.an = an

    def run(self) -> None:
        for unit, body, _taint, _laundered, _self_class, _key in _gap_scopes(self.an):
            nodes = list(_own_nodes(body))
            wraps = [
                n
                for n in nodes
                if isinstance(n, ast.Call)
                and n.args
                and isinstance(n.args[0], ast.Name)
                and _dotted(n.func)
                and self.an._wrapper_kind(n, unit) == "ddp"
            ]
            if not wraps:
                continue
            changes = self._grad_switches(nodes)
            for wrap in wraps:
                module = wrap.args[0].id  # type: ignore[attr-defined]
                held = {module} | {
                    t.id
                    for n in nodes
                    if isinstance(n, ast.Assign) and n.value is wrap
                    for t in n.targets
                    if isinstance(t, ast.Name)
                }
                frozen = [c for c, root, on in changes if not on and root == module and c.lineno < wrap.lineno]
                if not frozen:
                    continue
                later = next(
                    (c for c, root, on in changes if on and root in held and c.lineno > (wrap.end_lineno or 0)), None
                )
                if later is not None and id(later) not in self.an.found:
                    self._report(later, wrap, frozen[0], module, unit)

    @staticmethod
    def _grad_switches(nodes: list[ast.AST]) -> list[tuple[ast.AST, str | None, bool]]:
        """(statement part, root name of the module whose parameters it switches, switched on) for every
        ``p.requires_grad_(...)``/``p.requires_grad = ...`` with a constant value, ``p`` a loop variable over
        ``<module ...>.parameters()`` or ``named_parameters()`` (or the module itself)."""
        loops: dict[str, str | None] = {}
        for loop in nodes:
            if (
                isinstance(loop, (ast.For, ast.AsyncFor))
                and isinstance(loop.iter, ast.Call)
                and _terminal(loop.iter.func) in ("parameters", "named_parameters")
            ):
                for name in _target_names(loop.target):
                    loops[name] = _root_name(loop.iter)
        out: list[tuple[ast.AST, str | None, bool]] = []
        for node in nodes:
            value: ast.expr | None = None
            receiver: ast.expr | None = None
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "requires_grad_"
            ):
                receiver = node.func.value
                value = node.args[0] if node.args else ast.Constant(True)
            elif isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Attribute) and target.attr == "requires_grad":
                    receiver, value = target.value, node.value
            if receiver is None or not isinstance(value, ast.Constant) or not isinstance(value.value, bool):
                continue
            root = _root_name(receiver)
            out.append((node, loops.get(root or "", root), value.value))
        return out

    def _report(self, change: ast.AST, wrap: ast.Call, frozen: ast.AST, module: str, unit: _Unit) -> None:
        shown = unit.text(change)
        why = (
            f"`{shown}` sets parameters of `{module}` to require grad after `{unit.text(wrap)}` (line "
            f"{wrap.lineno + unit.offset}) wrapped it, and they were frozen before the wrap (line "
            f"{frozen.lineno + unit.offset}): DDP's constructor registers its gradient all_reduce only for the "
            "parameters that require grad at that moment, so these gradients are never all-reduced and each rank's "
            "copy of them moves with its own data; the replicas drift apart silently (torch 2.13.0 "
            "torch/nn/parallel/distributed.py: _build_params_for_reducer keeps 'if param.requires_grad', and the "
            "class docstring: 'No parameters should be added nor removed later')"
        )
        fix = (
            "decide which parameters train before wrapping: unfreeze them before DDP(...) and keep them out of the "
            "optimizer (or at lr 0) until the unfreeze step, or wrap the module again after changing requires_grad "
            "(on every rank)"
        )
        _record_finding(
            self.an,
            change,
            unit,
            "unfrozen-after-wrap",
            f"{module} wrapped at line {wrap.lineno + unit.offset} with these parameters frozen",
            why,
            fix,
            collective=f"{_dotted(wrap.func)}({module}) (its gradient all_reduce)",
            condition_line=wrap.lineno + unit.offset,
            key=change,
        )


# ------------------------------------- lintrecall32b: a per-rank object saved by DCP under a key every rank shares

_DCP_SAVES = frozenset({"save", "async_save", "save_state_dict"})


class _SharedCheckpointKey:
    """``shared-checkpoint-key`` - ``torch.distributed.checkpoint.save`` given a state dict with an entry under a key
    that is the same on every rank (a string constant) whose value is the state of an object built from this
    process's rank (``"dataloader": data.state_dict()``, ``data = PackedDocuments(rank)``). DCP's default planner
    takes an entry with the same fully qualified name on several ranks for a replicated one and writes it once
    (``dedup_save_plans``), so ``dcp.load`` hands every rank that one rank's state. Round 13's
    ``buggy_dcp_dataloader_state_shared_key``; a key built from the rank (``f"dp_rank_{rank}"``, torchtitan's
    ``ParallelAwareDataloader``) is quiet."""

    def __init__(self, an: _Analysis) -> None:
        self.an = an

    def run(self) -> None:
        for unit, body, _taint, _laundered, _self_class, key in _gap_scopes(self.an):
            for call in (n for n in _own_nodes(body) if isinstance(n, ast.Call)):
                if not _dotted(call.func) or _terminal(call.func) not in _DCP_SAVES:
                    continue
                if not self.an._resolve(call.func, unit).startswith("torch.distributed.checkpoint"):
                    continue
                state = _argument(call, 0, "state_dict")
                if state is None or id(call) in self.an.found:
                    continue
                for name, value, scope, binding in self._entries(state, key, {}, 0):
                    if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                        continue
                    held = (
                        value.func.value
                        if _terminal(value.func if isinstance(value, ast.Call) else value) == ("state_dict")
                        and isinstance(value, ast.Call)
                        and isinstance(value.func, ast.Attribute)
                        else value
                    )
                    built = self._per_rank(held, scope, binding, 0)
                    if built is not None:
                        self._report(call, name, value, built, scope, unit)
                        break

    def _body(self, scope: str | None) -> list[ast.stmt]:
        if scope is None:
            return [s for u in self.an.units if u.report for s in u.tree.body]
        return self.an.table[scope].node.body

    def _params(self, scope: str | None) -> list[str]:
        if scope is None:
            return []
        args = self.an.table[scope].node.args
        return [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]

    def _bind(self, call: ast.Call, callee: str, scope: str | None, binding: dict) -> dict:
        params = self._params(callee)
        bound = {p: (a, scope, binding) for p, a in zip(params, call.args) if not isinstance(a, ast.Starred)}
        bound.update({k.arg: (k.value, scope, binding) for k in call.keywords if k.arg in params})
        return bound

    def _function(self, call: ast.AST) -> str | None:
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name):
            func = self.an.table.get(call.func.id)
            if func is not None and func.self_class is None:
                return func.key
        return None

    def _assigned(self, name: str, scope: str | None) -> list[ast.Assign]:
        return [
            n
            for n in _own_nodes(self._body(scope))
            if isinstance(n, ast.Assign) and any(name in _target_names(t) for t in n.targets)
        ]

    def _entries(self, state: ast.expr, scope: str | None, binding: dict, depth: int) -> list[tuple]:
        """(key, value, scope, binding) of the dict literal ``state`` stands for: the literal itself, a name of the
        scope assigned it once, or a call of a function of the file whose every return is a dict literal."""
        if depth > 4:
            return []
        if isinstance(state, ast.Dict):
            return [(k, v, scope, binding) for k, v in zip(state.keys, state.values) if k is not None]
        if isinstance(state, ast.Name):
            if state.id in self._params(scope) and state.id in binding:
                arg, outer, outer_binding = binding[state.id]
                return self._entries(arg, outer, outer_binding, depth + 1)
            made = self._assigned(state.id, scope)
            if len(made) == 1 and len(made[0].targets) == 1 and isinstance(made[0].targets[0], ast.Name):
                return self._entries(made[0].value, scope, binding, depth + 1)
            return []
        callee = self._function(state)
        if callee is None:
            return []
        returns = [n.value for n in _own_nodes(self._body(callee)) if isinstance(n, ast.Return)]
        if not returns or not all(isinstance(r, ast.Dict) for r in returns):
            return []
        inner = self._bind(state, callee, scope, binding)  # type: ignore[arg-type]
        return [e for r in returns for e in self._entries(r, callee, inner, depth + 1)]  # type: ignore[arg-type]

    def _per_rank(self, expr: ast.expr, scope: str | None, binding: dict, depth: int) -> tuple[ast.Call, str] | None:
        """The call of a class of the file that built the object ``expr`` holds, with an argument read from the
        rank (and used by the class's ``__init__``), and the argument's text; None when not shown."""
        if depth > 6:
            return None
        if isinstance(expr, ast.Name):
            if expr.id in self._params(scope) and expr.id in binding:
                arg, outer, outer_binding = binding[expr.id]
                return self._per_rank(arg, outer, outer_binding, depth + 1)
            made = sorted((n for n in self._assigned(expr.id, scope) if n.lineno < expr.lineno), key=lambda n: n.lineno)
            if not made or len(made[-1].targets) != 1:
                return None
            target, value = made[-1].targets[0], made[-1].value
            if isinstance(target, ast.Name):
                return self._per_rank(value, scope, binding, depth + 1)
            if isinstance(target, ast.Tuple) and (callee := self._function(value)) is not None:
                position = next(
                    (i for i, t in enumerate(target.elts) if isinstance(t, ast.Name) and t.id == expr.id), None
                )
                returns = [n.value for n in _own_nodes(self._body(callee)) if isinstance(n, ast.Return)]
                if position is None or len(returns) != 1 or not isinstance(returns[0], ast.Tuple):
                    return None
                if len(returns[0].elts) != len(target.elts):
                    return None
                inner = self._bind(value, callee, scope, binding)  # type: ignore[arg-type]
                return self._per_rank(returns[0].elts[position], callee, inner, depth + 1)
            return None
        if not (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name)):
            return None
        cls = expr.func.id
        init = self.an.table.get(f"{cls}.__init__")
        if cls not in self.an.class_nodes or init is None:
            return None
        names = [a.arg for a in (*init.node.args.posonlyargs, *init.node.args.args)][1:]
        used = {n.id for n in _own_nodes(init.node.body) if isinstance(n, ast.Name)}
        given = [(names[i], a) for i, a in enumerate(expr.args) if i < len(names)]
        given += [(k.arg, k.value) for k in expr.keywords if k.arg]
        for param, arg in given:
            if param in used and self._rank_read(arg, scope, binding, depth + 1):
                return expr, param
        return None

    def _rank_read(self, expr: ast.expr, scope: str | None, binding: dict, depth: int) -> bool:
        if depth > 8:
            return False
        if isinstance(expr, ast.Name) and expr.id in self._params(scope) and expr.id in binding:
            arg, outer, outer_binding = binding[expr.id]
            return self._rank_read(arg, outer, outer_binding, depth + 1)
        return _rank_sourced(expr, self._body(scope), set(self._params(scope)))

    def _report(
        self, call: ast.Call, name: ast.Constant, value: ast.expr, built: tuple[ast.Call, str], scope, unit: _Unit
    ) -> None:
        func = self.an.table.get(scope) if scope is not None else None
        entry_unit = func.unit if func is not None else unit
        made, param = built
        shown = entry_unit.text(value)
        why = (
            f"the state given to `{unit.text(call.func)}` holds `{shown}` under the key {name.value!r} (line "
            f"{name.lineno + entry_unit.offset}), the same on every rank, while the object is this rank's own: it "
            f"was built by `{unit.text(made) if made in ast.walk(unit.tree) else made.func.id + '(...)'}` from the "
            f"rank (its `{param}`). DCP's default planner takes entries with the same key on several ranks for "
            "replicated ones and writes one rank's copy (torch 2.13.0 torch/distributed/checkpoint/"
            "_dedup_save_plans.py dedup_save_plans, called by DefaultSavePlanner.create_global_plan), so the "
            "load gives every rank that one rank's state: the others resume from another rank's position and "
            "their loops and collectives no longer line up"
        )
        fix = (
            'save this rank\'s state under a key of its own, built from the rank (f"dp_rank_{rank}", as '
            "torchtitan's ParallelAwareDataloader does), and load it back under the same key"
        )
        _record_finding(
            self.an,
            call,
            unit,
            "shared-checkpoint-key",
            f"{name.value!r} holds each rank's own state",
            why,
            fix,
            condition_line=name.lineno + entry_unit.offset
            if entry_unit is unit and name.lineno < call.lineno
            else None,
        )


class _Unknown(Exception):
    """What one rank does cannot be worked out statically."""


def _rank_chain(
    an: _Analysis, stmt: ast.If, taint: set[str], laundered: dict[str, int]
) -> list[tuple[str, list[ast.stmt]]] | None:
    """The branches of ``if``/``elif``/``else`` on the rank, as (the condition that leads to it, its body); None when
    the first test is not rank-dependent. The last branch is the ``else`` (empty when there is none)."""
    if not an.mentions_rank(stmt.test, taint, laundered, files=False):
        return None
    branches: list[tuple[str, list[ast.stmt]]] = []
    node: ast.If = stmt
    while True:
        text = ast.unparse(node.test)
        branches.append((text, node.body))
        if len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
            if not an.mentions_rank(node.orelse[0].test, taint, laundered, files=False):
                branches.append((f"not ({text})", node.orelse))
                return branches
            node = node.orelse[0]
            continue
        branches.append((f"not ({text})", node.orelse))
        return branches


class _BranchPairs:
    """Checks of what the branches of one ``if``/``elif``/``else`` on the rank do relative to each other, when torch
    pairs their collectives by position (the k-th collective of every rank of a group is one collective):

    * ``collective-order`` - the branches make the same collectives with the same arguments in different orders
      (``if rank == 0: all_reduce(a); all_reduce(b) else: all_reduce(b); all_reduce(a)``): the first call of one
      branch pairs with the first of the other, so values of different tensors are combined (silently on gloo
      when their sizes agree).
    * ``file-race`` - a file written (or a folder made) in one branch after its k-th collective, and read, looked at
      or listed by the ranks of another branch (or after the ``if``) after no more than k collectives: the
      collectives before the write pair with the readers' collectives before the read, so nothing orders the write
      before the read (``if rank == 0: barrier(); save(p) else: barrier(); load(p)``).
    * ``store-key`` - a store wait cycle: each branch waits (``store.wait([k])``/``store.get(k)``) for a key that
      only another branch sets, after its own wait.

    Only branches of straight-line calls are compared: a nested ``if`` on the rank, a loop that makes a collective,
    a point-to-point call, an ``async_op=True`` call or a store call (for the first two checks) leaves the ``if``
    alone."""

    def __init__(self, an: _Analysis) -> None:
        self.an = an

    def run(self) -> None:
        self.elifs: set[int] = set()  # the If nodes that are a checked chain's elifs
        for unit, body, taint, laundered, self_class, key in _gap_scopes(self.an):
            self.unit, self.taint, self.laundered = unit, taint, laundered
            self.self_class, self.key = self_class, key
            self.order = _Order(self.an, unit, taint, self_class, key)
            self._block(body, [])

    def _block(self, stmts: list[ast.stmt], before: list[ast.stmt]) -> None:
        for i, stmt in enumerate(stmts):
            if isinstance(stmt, _SCOPES):
                continue
            # an `elif` is an If inside its chain's `else`: its chain's branches were checked with the whole chain's
            # (checked again from each elif, a dispatch of n cases took n²/2 branch readings: 3,200 cases ran
            # past 300 s)
            if isinstance(stmt, ast.If) and id(stmt) not in self.elifs:
                chain = _rank_chain(self.an, stmt, self.taint, self.laundered)
                if chain is not None:
                    node = stmt
                    while len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
                        node = node.orelse[0]
                        self.elifs.add(id(node))
                    self._chain(stmt, chain, stmts[i + 1 :], [*before, *stmts[:i]])
            for part in ("body", "orelse", "finalbody"):
                inner = getattr(stmt, part, None)
                if isinstance(inner, list):
                    self._block(inner, [])
            for handler in getattr(stmt, "handlers", ()):
                self._block(handler.body, [])
            for case in getattr(stmt, "cases", ()):
                self._block(case.body, [])

    # -- events

    def _events(self, stmts: list[ast.stmt], tail: bool = False) -> tuple[list[tuple], bool] | None:
        """The events of straight-line ``stmts`` in order, and whether they leave (return, raise, break, continue);
        None when lint cannot tell them apart per rank. In a tail, a statement that does not fit ends the events."""
        events: list[tuple] = []
        for stmt in stmts:
            if isinstance(stmt, _SCOPES):
                continue
            if isinstance(stmt, (ast.Return, ast.Raise, ast.Break, ast.Continue)):
                for node in ast.iter_child_nodes(stmt):
                    got = self._call_events(node)
                    if got is None:
                        return (events, True) if tail else None
                    events += got
                return events, True
            if isinstance(
                stmt, (ast.If, ast.While, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.Try, ast.Match)
            ):
                inner = self._compound(stmt)
                if inner is None:
                    return (events, True) if tail else None
                events += inner
                continue
            got = self._call_events(stmt)
            if got is None:
                return (events, True) if tail else None
            events += got
        return events, False

    def _compound(self, stmt: ast.stmt) -> list[tuple] | None:
        """A compound statement's events when it holds no rank test, no leaving and no collective in a loop or under
        a test (its file events count, in source order)."""
        if any(isinstance(n, (ast.Return, ast.Raise, ast.Break, ast.Continue)) for n in _own_nodes([stmt])):
            return None
        if isinstance(stmt, (ast.If, ast.While)) and self.an.mentions_rank(
            stmt.test, self.taint, self.laundered, files=False
        ):
            return None
        if isinstance(stmt, ast.While):
            return None  # a reader polling for the file orders by itself
        events: list[tuple] = []
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                got = self._call_events(item.context_expr)
                if got is None:
                    return None
                events += got
            inner = self._events(stmt.body)
            if inner is None or inner[1]:
                return None
            return events + inner[0]
        heads = (
            [stmt.test]
            if isinstance(stmt, ast.If)
            else [stmt.iter]
            if isinstance(stmt, (ast.For, ast.AsyncFor))
            else []
        )
        for head in heads:
            got = self._call_events(head)
            if got is None:
                return None
            events += got
        blocks = [getattr(stmt, p, []) for p in ("body", "orelse", "finalbody")]
        blocks += [h.body for h in getattr(stmt, "handlers", ())] + [c.body for c in getattr(stmt, "cases", ())]
        for block in blocks:
            inner = self._events(block)
            if inner is None:
                return None
            if any(e[0] == "order" for e in inner[0]):
                return None  # a collective under a test or in a loop: its count is not the statement's
            events += inner[0]
        return events

    def _call_events(self, node: ast.AST) -> list[tuple] | None:
        events: list[tuple] = []
        for call in _calls_in_order(node):
            full = self.an._resolve(call.func, self.unit) if _dotted(call.func) else ""
            name = full.rpartition(".")[2]
            if full.startswith("torch.distributed.") and name in POINT_TO_POINT:
                return None
            if isinstance(call.func, ast.Attribute) and "store" in (_dotted(call.func.value) or "").lower():
                if call.func.attr in ("wait", "get", "set", "add", "compare_set", "multi_set", "multi_get"):
                    events.append(("store", call.func.attr, call))
                    continue
            if self.order._orders(call):
                if _async_op(call):
                    return None
                found = self.an.classify(call, self.unit, self.self_class, self.key)
                coll = found is not None and found.kind == "coll"
                events.append(("order", call, coll))
                continue
            made = _made_folder(call, full)
            if made is not None:
                events.append(("made", made, call))
                continue
            written = _written_path(call, full)
            if written is not None:
                events.append(("write", written[0], call, written[1]))
                continue
            read = _read_path(call, full)
            look = read is None and _looked_path(call, full) is not None
            if look:
                read = _looked_path(call, full)
            if read is not None:
                events.append(("read", read, call, look))
            listed = _listed(call, full)
            if listed is not None:
                events.append(("list", listed[0], call))
        return events

    # -- the checks

    def _chain(
        self, stmt: ast.If, chain: list[tuple[str, list[ast.stmt]]], after: list[ast.stmt], before: list[ast.stmt]
    ) -> None:
        own = [self._events(body) for _, body in chain]
        tail = self._events(after, tail=True)
        if tail is None:
            tail = ([], True)
        if any(o is None for o in own):
            return
        self._orders(stmt, chain, own)
        stores = any(e[0] == "store" for o in own for e in o[0])
        if stores:
            self._store_cycle(stmt, chain, own, before)
            return
        seqs = [o[0] + ([] if o[1] else [e for e in tail[0] if e[0] != "store"]) for o in own]
        for x, (cond, _) in enumerate(chain):
            writes = [(k, e) for k, e in enumerate(own[x][0]) if e[0] in ("write", "made")]
            for k, write in writes:
                i = sum(e[0] == "order" for e in own[x][0][:k])
                if i == 0:
                    continue  # nothing before the write pairs with anything: the file-race of :class:`_Order`
                n = sum(e[0] == "order" for e in seqs[x])
                last = next(e for e in reversed(own[x][0][:k]) if e[0] == "order")
                for y in range(len(chain)):
                    if y == x:
                        continue
                    orders = 0
                    for e in seqs[y]:
                        if e[0] == "order":
                            orders += 1
                            continue
                        if not self._reads(write, e):
                            continue
                        if orders <= i or n <= i:
                            self._race(stmt, cond, write, last, i, e, orders)
                        break

    @staticmethod
    def _reads(write: tuple, event: tuple) -> bool:
        if write[0] == "write":
            return event[0] == "read" and event[1] == write[1]
        folder = write[1]
        if event[0] == "read":
            return event[1] == folder or _inside(event[2].args[0] if event[2].args else event[2].func, folder)
        if event[0] == "list":
            return _inside(event[1], folder)
        if event[0] == "write":
            return _inside(event[2].args[0] if event[2].args else event[2].func, folder) or event[1].startswith(folder)
        return False

    def _race(self, stmt: ast.If, cond: str, write: tuple, last: tuple, i: int, read: tuple, orders: int) -> None:
        call = read[2]
        if id(call) in self.an.found:
            return
        unit = self.unit
        at = write[2].lineno + unit.offset
        paired = last[1]
        paired_line = paired.lineno + unit.offset
        paired_name = _dotted(paired.func) or unit.text(paired.func)
        what = "write" if write[0] == "write" else "make"
        thing = f"`{write[1]}`" if write[0] == "write" else f"the folder `{write[1]}`"
        nth = {1: "first", 2: "second", 3: "third"}.get(i, f"{i}th")
        if read[0] == "read" and read[3]:
            reads, finds = (
                f"look at it (`{_dotted(call.func) or unit.text(call.func)}`)",
                "get False and go the way a missing file takes",
            )
        elif read[0] == "list":
            reads, finds = "list it", "miss what is not there yet"
        elif read[0] == "write":
            reads, finds = "write into it", "fail with 'No such file or directory'"
        else:
            reads, finds = "read it", "read a missing or half-written file"
        why = (
            f"ranks where `{cond}` is true {what} {thing} at line {at}, after their {nth} collective "
            f"(`{paired_name}` at line {paired_line}); the other ranks {reads} here after {orders} "
            f"collective{'s' if orders != 1 else ''} of their own. torch pairs the ranks' collectives by position, so "
            f"the collective before the {what} is the one the readers have already passed: it orders what came before "
            f"it, not the {what} after it, and nothing later pairs with a collective before this line. A rank can "
            f"{finds} (it works only when the writer is faster)"
        )
        fix = (
            f"{what} before the collective at line {paired_line}, or add a dist.barrier() after line {at} that every "
            "rank reaches before this line (outside the condition)"
        )
        self._report(call, stmt, cond, "file-race", why, fix)

    def _report(self, call: ast.Call, stmt: ast.If, condition: str, kind: str, why: str, fix: str) -> None:
        """A finding of ``kind`` at ``call`` under the if ``stmt`` (its branch's ``condition``)."""
        unit = self.unit
        finding = Finding(
            path=self.an.path,
            line=call.lineno + unit.offset,
            col=call.col_offset + unit.indent + 1,
            collective=_dotted(call.func) or unit.text(call.func),
            condition=condition,
            kind=kind,
            why=why,
            fix=fix,
            cell=unit.cell,
            condition_line=stmt.lineno + unit.offset,
        )
        self.an.found[id(call)] = (kind, finding)

    def _orders(self, stmt: ast.If, chain: list[tuple[str, list[ast.stmt]]], own: list) -> None:
        keyed = []
        for events, _ in own:
            calls = [e[1] for e in events if e[0] == "order"]
            if not all(e[2] for e in events if e[0] == "order"):
                return  # a function of the file that reaches a collective: its own order is not read here
            targets = [(self.an.classify(c, self.unit, self.self_class, self.key).target, c) for c in calls]
            # groups made in another order are the branch check's (review70b M4), members-only ones quiet there
            keyed.append([(t, self._arguments(c), c) for t, c in targets if t.rpartition(".")[2] not in _GROUP_MAKING])
        # only branches making the same calls can make them in another order: compared within those (every pair of
        # a dispatch's branches was n²/2 sorts)
        alike: dict[tuple, list[int]] = {}
        for x, a in enumerate(keyed):
            if len(a) >= 2:
                alike.setdefault(tuple(sorted(k[:2] for k in a)), []).append(x)
        for xs in alike.values():
            firsts: dict[tuple, int] = {}  # each order of the calls met so far -> the first branch making it
            for y in xs:
                b = keyed[y]
                order = tuple(k[:2] for k in b)
                earlier = sorted(first for seen, first in firsts.items() if seen != order)
                firsts.setdefault(order, y)
                for x in earlier:  # as every earlier branch in turn, one of each order (the same findings)
                    a = keyed[x]
                    diff = next(k for k in range(len(a)) if a[k][:2] != b[k][:2])
                    self._swap(stmt, chain[x][0], chain[y][0], a, b, diff)

    @staticmethod
    def _arguments(call: ast.Call) -> str:
        return ast.dump(ast.Tuple(elts=list(call.args), ctx=ast.Load())) + "".join(
            sorted(f"{k.arg}={ast.dump(k.value)}" for k in call.keywords)
        )

    def _swap(self, stmt: ast.If, cond_a: str, cond_b: str, a: list, b: list, k: int) -> None:
        unit = self.unit
        call = b[k][2]
        if id(call) in self.an.found or id(a[k][2]) in self.an.found:
            return
        shown_a = [unit.text(c[2]) for c in a]
        shown_b = [unit.text(c[2]) for c in b]
        same_kind = a[k][0] == b[k][0]
        mixed = (
            "each rank finishes with no error but gets values of different tensors combined (barrierlab run on 2 "
            "ranks of `if rank == 0: all_reduce(a); all_reduce(b) else: all_reduce(b); all_reduce(a)`: each rank's "
            "`a` came out as its own a plus the other rank's b)"
            if same_kind
            else "the ranks are in different collectives at once, which fails or waits until the timeout"
        )
        why = (
            f"ranks where `{cond_a}` is true make {'; '.join(shown_a)}, and ranks where `{cond_b}` is true make "
            f"{'; '.join(shown_b)}: the same calls in another order. torch pairs each rank's collectives by "
            f"position, not by tensor, so call {k + 1} here (`{unit.text(call)}`) meets "
            f"`{unit.text(a[k][2])}` (line {a[k][2].lineno + unit.offset}) on the other ranks: {mixed}"
        )
        fix = "make the collectives in one order on every rank (move them out of the if, or write both branches alike)"
        self._report(call, stmt, cond_b, "collective-order", why, fix)

    def _store_cycle(
        self, stmt: ast.If, chain: list[tuple[str, list[ast.stmt]]], own: list, before: list[ast.stmt]
    ) -> None:
        """Each branch in turn: a set adds its key; a wait or get goes on only when its key is set. Stuck branches
        whose keys only stuck branches set later wait for each other: every rank waits until the store's timeout."""
        steps: list[list[tuple[str, str, ast.Call]]] = []
        for events, _ in own:
            seq = []
            for e in events:
                if e[0] != "store":
                    continue
                keys = _store_keys(e[2])
                if keys is None:
                    return
                seq.append((e[1], keys, e[2]))
            steps.append(seq)
        done: set[str] = set()
        for call in (n for n in _own_nodes(before) if isinstance(n, ast.Call)):
            if isinstance(call.func, ast.Attribute) and call.func.attr in _STORE_SETS:
                keys = _store_keys(call)
                if keys is None:
                    return
                done |= set(keys)
        at = [0] * len(steps)
        moved = True
        while moved:
            moved = False
            for b, seq in enumerate(steps):
                while at[b] < len(seq):
                    attr, keys, _ = seq[at[b]]
                    if attr in _STORE_SETS:
                        done |= set(keys)
                    elif not set(keys) <= done:
                        break
                    at[b] += 1
                    moved = True
        stuck = [b for b, seq in enumerate(steps) if at[b] < len(seq)]
        later = {k for b in stuck for attr, keys, _ in steps[b][at[b] :] if attr in _STORE_SETS for k in keys}
        cycle = [b for b in stuck if set(steps[b][at[b]][1]) - done <= later and set(steps[b][at[b]][1]) - done]
        if len(cycle) < 2:
            return
        unit = self.unit
        for b in cycle:
            attr, keys, call = steps[b][at[b]]
            if id(call) in self.an.found:
                continue
            missing = sorted(set(keys) - done)
            setters = [
                f"line {c.lineno + unit.offset} (where `{chain[o][0]}`)"
                for o in cycle
                if o != b
                for a2, k2, c in steps[o][at[o] :]
                if a2 in _STORE_SETS and set(k2) & set(missing)
            ]
            why = (
                f"ranks where `{chain[b][0]}` is true wait here for {', '.join(repr(k) for k in missing)}, which only "
                f"{', '.join(setters)} sets, after that branch's own wait for a key this branch sets only after this "
                "line: each rank waits for the other, a store wait cycle, until the store's timeout (a TCPStore raises "
                "DistStoreError)"
            )
            fix = "set the keys a rank publishes before it waits for the others' keys, in every branch"
            self._report(call, stmt, chain[b][0], "store-key", why, fix)


_STORE_SETS = frozenset({"set", "add", "compare_set", "multi_set"})
_STORE_READS = frozenset({"get", "wait", "multi_get"})


def _store_keys(call: ast.Call) -> list[str] | None:
    """The constant keys a store call names (``store.set("k", v)``, ``store.wait(["a", "b"])``), or None."""
    if not call.args:
        return None
    arg = call.args[0]
    items = arg.elts if isinstance(arg, (ast.List, ast.Tuple)) else [arg]
    keys = [i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)]
    return keys if len(keys) == len(items) and keys else None


def _key_pattern(node: ast.expr) -> re.Pattern[str] | None:
    """A pattern of the keys ``node`` can be (a constant, or an f-string whose holes match anything); None for a key
    lint cannot read (a name, a call)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return re.compile(re.escape(node.value) + r"\Z")
    if isinstance(node, ast.JoinedStr):
        parts = [re.escape(str(p.value)) if isinstance(p, ast.Constant) else ".*" for p in node.values]
        return re.compile("".join(parts) + r"\Z", re.S)
    return None


class _StoreUnset:
    """``store-key`` - a store ``get``/``wait`` of a constant key that no line of the file sets (``set``, ``add``,
    ``compare_set``, ``multi_set``, by the key's text or an f-string that can make it): it blocks until the store's
    timeout unless a process outside the file sets it. Quiet when some set's key cannot be read (a name, a call)."""

    def __init__(self, an: _Analysis) -> None:
        self.an = an

    def run(self) -> None:
        setters: list[re.Pattern[str]] = []
        readers: list[tuple[ast.Call, _Unit, list[str]]] = []
        for unit in self.an.units:
            for call in (n for n in ast.walk(unit.tree) if isinstance(n, ast.Call)):
                if not isinstance(call.func, ast.Attribute) or not call.args:
                    continue
                attr = call.func.attr
                if attr in _STORE_SETS:
                    arg = call.args[0]
                    items = arg.elts if attr == "multi_set" and isinstance(arg, (ast.List, ast.Tuple)) else [arg]
                    for item in items:
                        pattern = _key_pattern(item)
                        if pattern is None:
                            if attr != "add" or "store" in (_dotted(call.func.value) or "").lower():
                                return  # a key lint cannot read may be any key
                            continue
                        setters.append(pattern)
                elif attr in _STORE_READS and unit.report and "store" in (_dotted(call.func.value) or "").lower():
                    keys = _store_keys(call)
                    if keys is not None:
                        readers.append((call, unit, keys))
        for call, unit, keys in readers:
            unset = [k for k in keys if not any(p.match(k) for p in setters)]
            if not unset or id(call) in self.an.found:
                continue
            attr = call.func.attr  # type: ignore[union-attr]
            shown = ", ".join(repr(k) for k in unset)
            why = (
                f"`store.{attr}` blocks until {shown} exists, and no line of this file sets "
                f"{'it' if len(unset) == 1 else 'them'} (store.set, add, compare_set): unless a process outside this "
                "file does, every rank that gets here waits until the store's timeout (a TCPStore raises "
                "DistStoreError), and the other ranks wait for it in their next collective"
            )
            fix = f"set {shown} on the rank that publishes it (`store.set({unset[0]!r}, value)`) before the others read it, or read the key that rank sets"
            _record_finding(self.an, call, unit, "store-key", f"{shown} never set", why, fix)


_P2P_KIND = {"send": "send", "isend": "send", "send_object_list": "send", "recv": "recv", "irecv": "recv",
             "recv_object_list": "recv"}  # fmt: skip
_P2P_PEER = {"send": "dst", "recv": "src"}
_P2P_GROUPED = frozenset({"group", "group_dst", "group_src", "group_peer"})
_RANK_PARAMETERS = frozenset({"rank", "global_rank"})
_WORLD_PARAMETERS = frozenset({"world_size", "world"})


def _rank_value(node: ast.AST, env: dict[str, int]) -> object:
    """The value of ``node`` on one rank: ints, booleans and tuples from constants, the names of ``env`` and
    ``get_rank()``/``get_world_size()`` (as ``env["<rank>"]``/``env["<world>"]``); :class:`_Unknown` otherwise."""
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, (int, bool))
        or (isinstance(node, ast.Constant) and node.value is None)
    ):
        return node.value
    if isinstance(node, ast.Name) and node.id in env:
        return env[node.id]
    if isinstance(node, ast.Call) and not node.keywords:
        name = _terminal(node.func)
        if name in ("get_rank", "get_world_size") and not node.args:
            return env["<rank>" if name == "get_rank" else "<world>"]
        if name == "int" and isinstance(node.func, ast.Name) and len(node.args) == 1:
            value = _rank_value(node.args[0], env)
            if isinstance(value, int):
                return int(value)
    if isinstance(node, ast.BinOp):
        left, right = _rank_value(node.left, env), _rank_value(node.right, env)
        if isinstance(left, int) and isinstance(right, int):
            if isinstance(node.op, ast.Add):
                return left + right
            if isinstance(node.op, ast.Sub):
                return left - right
            if isinstance(node.op, ast.Mult):
                return left * right
            if isinstance(node.op, (ast.FloorDiv, ast.Mod)) and right:
                return left // right if isinstance(node.op, ast.FloorDiv) else left % right
    if isinstance(node, ast.UnaryOp):
        value = _rank_value(node.operand, env)
        if isinstance(node.op, ast.Not):
            return not value
        if isinstance(node.op, ast.USub) and isinstance(value, int):
            return -value
    if isinstance(node, ast.BoolOp):
        for value in node.values:
            got = _rank_value(value, env)
            if isinstance(node.op, ast.And) and not got or isinstance(node.op, ast.Or) and got:
                return got
        return got
    if isinstance(node, ast.IfExp):
        return _rank_value(node.body if _rank_value(node.test, env) else node.orelse, env)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return tuple(_rank_value(e, env) for e in node.elts)
    if isinstance(node, ast.Compare):
        left = _rank_value(node.left, env)
        for op, comparator in zip(node.ops, node.comparators):
            right = _rank_value(comparator, env)
            table: dict[type, Callable[[Any, Any], bool]] = {
                ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Lt: lambda a, b: a < b,
                ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b,
                ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
                ast.Is: lambda a, b: a is b, ast.IsNot: lambda a, b: a is not b,
            }  # fmt: skip
            try:
                if not table[type(op)](left, right):
                    return False
            except (TypeError, KeyError):
                raise _Unknown from None
            left = right
        return True
    raise _Unknown


class _ReusedStoreBarrier:
    """``store-key`` - torch's store-based barriers (``torch.distributed.elastic.utils.store.barrier(store,
    world_size, key_prefix)``, ``distributed_c10d._store_based_barrier(rank, store, group_name, ...)``) count the
    ranks that arrive under their key and set a "last member" key when the count reaches the world size, and leave
    both in the store: "the barrier can be used once per unique ``key_prefix``" (torch's docstring). A call with a
    constant key in code that runs more than once (in a loop, or a function called from a loop or from two places)
    waits only the first time; from the second use on every rank passes at once (rounds 14 and 41: a file or
    weights rank 0 is still writing are read by the others)."""

    _KEYED = {
        "torch.distributed.elastic.utils.store.barrier": ("key_prefix", 2),
        "torch.distributed.distributed_c10d._store_based_barrier": ("group_name", 2),
        "torch.distributed._store_based_barrier": ("group_name", 2),
    }

    def __init__(self, an: _Analysis) -> None:
        self.an = an
        self._callers: dict[str, list[tuple[str | None, ast.Call, bool]]] | None = None

    def run(self) -> None:
        # functions, and (review82l C3) each reported module body: a script's top-level loop runs it again too
        scopes: list[tuple[_Unit, ast.AST, str | None]] = [(f.unit, f.node, f.key) for f in self.an.funcs]
        scopes += [(u, u.tree, None) for u in self.an.units]
        for unit, root, func_key in scopes:
            if not unit.report:
                continue
            for node in _own_nodes(root.body):
                if not isinstance(node, ast.Call):
                    continue
                spec = self._KEYED.get(self.an._resolve(node.func, unit))
                if spec is None:
                    continue
                name, position = spec
                key = next((k.value for k in node.keywords if k.arg == name), None)
                if key is None and len(node.args) > position:
                    key = node.args[position]
                if not (isinstance(key, ast.Constant) and isinstance(key.value, str)) or id(node) in self.an.found:
                    continue
                loop = _loop_around(node, root)
                if func_key is not None:
                    again = self._again(func_key, loop, set())
                else:
                    again = f"in the loop at line {loop.lineno + unit.offset}" if loop is not None else None
                if again is None:
                    continue
                why = (
                    f"this store-based barrier's key {key.value!r} is a constant, and the barrier runs more than once "
                    f"({again}): the barrier counts the ranks that arrive under the key and, at the last one, sets a "
                    "key that lets every rank through, and both stay in the store (torch: 'the barrier can be used "
                    "once per unique key_prefix'), so from the second use on every rank passes at once without "
                    "waiting for the others, and what it was to order (a file or weights one rank is still writing) "
                    "is read before it is ready"
                )
                fix = (
                    "give every use its own key (a generation counter, or the step or split in it: "
                    f'f"{key.value}/{{step}}"), or wait with dist.barrier() (monitored_barrier) instead'
                )
                self.an.found[id(node)] = (
                    "store-key",
                    Finding(
                        path=self.an.path,
                        line=node.lineno + unit.offset,  # the call the header names (review87l M2)
                        col=node.col_offset + unit.indent + 1,
                        collective=_dotted(node.func) or unit.text(node.func),
                        condition=f"{name}={key.value!r} on every call",
                        kind="store-key",
                        why=why,
                        fix=fix,
                        cell=unit.cell,
                        condition_line=key.lineno + unit.offset if key.lineno != node.lineno else None,
                    ),
                )

    def _again(self, key: str, loop: ast.AST | None, seen: set[str]) -> str | None:
        """Why function ``key``'s code at hand runs more than once (``loop``: a loop around it in the function), or
        None when lint sees it run at most once."""
        if loop is not None:
            return f"in the loop at line {loop.lineno + self.an.table[key].unit.offset}"
        if key in seen or len(seen) > _MAX_DEPTH:
            return None
        seen = seen | {key}
        sites = self.callers().get(key, [])
        if len(sites) > 1:
            lines = ", ".join(
                sorted({str(call.lineno + self._unit(caller).offset) for caller, call, _ in sites}, key=int)
            )
            return f"`{self.an.table[key].node.name}()` is called at lines {lines}"
        for caller, call, looped in sites:
            if looped:
                return f"`{self.an.table[key].node.name}()` is called in a loop, at line {call.lineno + self._unit(caller).offset}"
            if caller is not None:
                found = self._again(caller, None, seen)
                if found is not None:
                    return found
        return None

    def _unit(self, caller: str | None) -> _Unit:
        return self.an.table[caller].unit if caller is not None else next(u for u in self.an.units if u.report)

    def callers(self) -> dict[str, list[tuple[str | None, ast.Call, bool]]]:
        """Each function of the file -> the calls of it: (calling function or None for module level, the call,
        whether a loop of the caller surrounds it)."""
        if self._callers is None:
            self._callers = {}
            scopes: list[tuple[str | None, ast.AST, _Unit, str | None]] = [
                (f.key, f.node, f.unit, f.self_class) for f in self.an.funcs
            ]
            scopes += [(None, u.tree, u, None) for u in self.an.units]
            for caller, root, unit, self_class in scopes:
                body = root.body  # type: ignore[attr-defined]
                for node in _own_nodes(body):
                    if not isinstance(node, ast.Call):
                        continue
                    found = self.an.classify(node, unit, self_class, caller)
                    if found is not None and found.kind == "call":
                        looped = _loop_around(node, root) is not None
                        self._callers.setdefault(found.target, []).append((caller, node, looped))
        return self._callers


class _RankUnbound:
    """``early-exit`` - a local name a function assigns only inside an ``if`` on the rank (nowhere else in the
    function, not a parameter, no ``else`` that assigns it) and then reads on every rank, outside any test on the
    rank or ``try``: on the ranks that skip the ``if`` the read raises ``UnboundLocalError`` and the rank leaves,
    while the others wait in the function's next collective (round 42's ultralytics item: ``final_epoch`` set
    inside the rank-0 block of the epoch loop, read by the validation test of every rank before the epoch-end
    broadcast of ``stop``)."""

    def __init__(self, an: _Analysis) -> None:
        self.an = an

    def run(self) -> None:
        for func in self.an.funcs:
            if func.unit.report:
                self._function(func)

    def _function(self, func: _Func) -> None:
        nodes = list(_own_nodes(func.node.body))
        ifs = [n for n in nodes if isinstance(n, ast.If) and self.an.mentions_rank(n.test, set(), files=False)]
        if not ifs:
            return
        args = func.node.args
        fixed = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
        fixed |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
        fixed |= {name for n in nodes if isinstance(n, (ast.Global, ast.Nonlocal)) for name in n.names}
        parents = {id(c): n for n in nodes for c in ast.iter_child_nodes(n)}
        # each name's binding nodes and its reads in source order, once per function: looked up per ``if`` (a
        # walk of every node for every ``if`` made a dispatch of n cases quadratic: 800 cases 1.1 -> 3.6 s)
        binders: dict[str, list[int]] = {}
        reads: dict[str, list[ast.Name]] = {}
        for n in nodes:
            for name in _bound_names(n):
                binders.setdefault(name, []).append(id(n))
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                reads.setdefault(n.id, []).append(n)
        for found in reads.values():
            found.sort(key=lambda n: (n.lineno, n.col_offset))
        for stmt in ifs:
            inside = {id(n) for n in _own_nodes(stmt.body)}
            bound = {n.id for n in _own_nodes(stmt.body) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            elsewhere = {name for name in bound if any(b not in inside for b in binders.get(name, ()))}
            for name in sorted(bound - elsewhere - fixed):
                read = next(
                    (
                        n
                        for n in reads.get(name, ())
                        if n.lineno > (stmt.end_lineno or stmt.lineno) and not self._guarded(n, func, parents)
                    ),
                    None,
                )
                if read is None or self._left_before(stmt, read, nodes, func):
                    continue
                after = self._collective_after(read, func, nodes)
                if after is not None:
                    self._report(func, stmt, read, after, self._short_circuit(read, parents, func.unit))

    def _guarded(self, node: ast.AST, func: _Func, parents: dict[int, ast.AST]) -> bool:
        """Whether ``node`` sits under a test that can differ between ranks, or in a ``try`` (a handler may catch
        the ``NameError``), within the function."""
        taint = self.an.func_taint.get(func.key, set())
        child = node
        while id(child) in parents:
            parent = parents[id(child)]
            if isinstance(parent, (ast.Try, getattr(ast, "TryStar", ast.Try))):
                return True
            if isinstance(parent, (ast.If, ast.IfExp, ast.While)) and child is not parent.test:
                if self.an.mentions_rank(parent.test, taint):
                    return True
            if isinstance(parent, ast.BoolOp) and child is not parent.values[0]:  # ``rank == 0 and name``
                before = parent.values[: parent.values.index(child)]  # type: ignore[arg-type]
                if any(self.an.mentions_rank(v, taint) for v in before):
                    return True
            child = parent
        return False

    def _left_before(self, stmt: ast.If, read: ast.AST, nodes: list[ast.AST], func: _Func) -> bool:
        """Whether the ranks that skip ``stmt`` may leave before ``read``: its ``else`` (or a later test on the rank
        before the read) returns, raises, breaks or continues."""
        exits = (ast.Return, ast.Raise, ast.Break, ast.Continue)
        if any(isinstance(n, exits) for n in _own_nodes(stmt.orelse)):
            return True
        taint = self.an.func_taint.get(func.key, set())
        return any(
            isinstance(n, ast.If)
            and n is not stmt
            and (stmt.end_lineno or stmt.lineno) < n.lineno < read.lineno  # type: ignore[attr-defined]
            and self.an.mentions_rank(n.test, taint)
            and any(isinstance(e, exits) for e in _own_nodes([n]))
            for n in nodes
        )

    def _collective_after(self, read: ast.AST, func: _Func, nodes: list[ast.AST]) -> ast.Call | None:
        """The first collective (or call of the file's that reaches one) the function makes after ``read`` (or in
        a loop around it), which the ranks that raised never reach."""
        loop = _loop_around(read, func.node)
        span = range(loop.lineno, (loop.end_lineno or loop.lineno) + 1) if loop is not None else range(0)
        calls = sorted(
            (n for n in nodes if isinstance(n, ast.Call) and (n.lineno > read.lineno or n.lineno in span)),  # type: ignore[attr-defined]
            key=lambda n: (n.lineno <= read.lineno, n.lineno, n.col_offset),  # type: ignore[attr-defined]
        )
        for call in calls:
            found = self.an.classify(call, func.unit, func.self_class, func.key)
            if found is not None and (found.kind == "coll" or (found.kind == "call" and found.target in self.an.reach)):
                return call
        return None

    @staticmethod
    def _short_circuit(read: ast.AST, parents: dict[int, ast.AST], unit: _Unit) -> str:
        """`` (when `a` is false)`` for a read on the right of ``a or name`` (true for ``and``): only then is it
        made; empty otherwise."""
        child = read
        while id(child) in parents and not isinstance(parents[id(child)], ast.stmt):
            parent = parents[id(child)]
            if isinstance(parent, ast.BoolOp) and child is not parent.values[0]:
                before = parent.values[: parent.values.index(child)]  # type: ignore[arg-type]
                word = "false" if isinstance(parent.op, ast.Or) else "true"
                return f" (when `{' and '.join(unit.text(v) for v in before)}` is {word})"
            child = parent
        return ""

    def _report(self, func: _Func, stmt: ast.If, read: ast.Name, call: ast.Call, when: str) -> None:
        if id(read) in self.an.found:
            return
        unit = func.unit
        test = unit.text(stmt.test)
        collective = _dotted(call.func) or unit.text(call.func)
        why = (
            f"`{read.id}` is assigned only inside `if {test}:` at line {stmt.lineno + unit.offset} (nowhere else in "
            f"`{func.node.name}()`), and read at line {read.lineno + unit.offset} on every rank{when}: on the ranks where "
            f"`{test}` is false the read raises UnboundLocalError and the rank leaves, so the others wait in "
            f"`{collective}(...)` at line {call.lineno + unit.offset} until the timeout or "
            f"{_ends_on_gloo('the leaving rank', 'fail')}"
        )
        fix = (
            f"assign `{read.id}` on every rank (compute it before or outside `if {test}:`, or give it a value in an "
            "else), or read it only under the same test"
        )
        # at the call the header names (review87l M2): the read is in why
        _record_finding(
            self.an,
            call,
            unit,
            "early-exit",
            f"not ({test})",
            why,
            fix,
            key=read,
            collective=collective,
            condition_line=stmt.lineno + unit.offset,
        )


def _bound_names(node: ast.AST) -> list[str]:
    """The names a node binds in its scope: assignment and loop targets, ``as`` names, imports, nested ``def``s and
    classes, names a ``match`` pattern captures."""
    if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
        return [node.id]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in node.names]
    if isinstance(node, ast.ExceptHandler) and node.name:
        return [node.name]
    if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
        return [node.name]
    if isinstance(node, ast.MatchMapping) and node.rest:
        return [node.rest]
    return []


def _loop_around(node: ast.AST, root: ast.AST) -> ast.AST | None:
    """The innermost ``for``/``while`` loop (or comprehension) of ``root`` (not inside nested functions) whose body
    holds ``node``, or None."""
    found: ast.AST | None = None

    def visit(current: ast.AST, loop: ast.AST | None) -> bool:
        nonlocal found
        for child in ast.iter_child_nodes(current):
            if child is node:
                found = loop
                return True
            if isinstance(child, _SCOPES) and child is not root:
                continue
            inner = loop
            if isinstance(current, (ast.For, ast.AsyncFor, ast.While)) and child is not getattr(current, "iter", None):
                inner = current if child not in getattr(current, "orelse", []) else loop
            if isinstance(current, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                inner = current
            if visit(child, inner):
                return True
        return False

    visit(root, None)
    return found


class _PointToPoint:
    """Point-to-point calls one function makes, rank by rank:

    * ``p2p-unmatched`` - a ``send``/``isend``/``recv``/``irecv`` (or an object-list variant) to or from a peer the
      code names (``dist.recv(t, src=0)``) when the peer's own way through the same function makes no matching
      call: lint evaluates the function's tests on the rank (``rank == 0``, ``dist.get_rank() != 0``) for every
      rank of the world the file states (else 2 ranks, or as many as the largest peer named needs), and leaves
      alone a function with a test, loop bound or helper it cannot evaluate around a point-to-point call, one
      called only under a rank test (another function makes the other side), ``batch_isend_irecv`` and calls
      with ``group=``. A peer it cannot evaluate (``dst=i`` of a loop) matches anything.
    * ``unwaited-async`` - a ``work = dist.isend(...)``/``irecv``/``batch_isend_irecv`` whose handle (or the list it
      is appended to) the function never uses again: nothing waits for it before the function returns.
    * ``read-before-wait`` - ``work = dist.irecv(t, ...)`` and a use of ``t`` in the same block before the statement
      that names ``work``: the message may not have arrived yet."""

    def __init__(self, an: _Analysis) -> None:
        self.an = an
        self._p2p_keys: set[str] | None = None
        #: lintrecall32: (function, rank) -> the data tests :meth:`_counted_test` decided on that rank's walk
        self._decided: dict[tuple[str, int], list[tuple[ast.expr, bool, int]]] = {}

    def _p2p_kind(self, call: ast.Call, unit: _Unit) -> str | None:
        if not _dotted(call.func):
            return None
        full = self.an._resolve(call.func, unit).replace("torch.distributed.distributed_c10d.", "torch.distributed.")
        if full.rpartition(".")[0] != "torch.distributed":
            return None
        return full.rpartition(".")[2]

    def run(self) -> None:
        found = False
        for func in self.an.funcs:
            calls = [
                (c, name)
                for c in _own_nodes(func.node.body)
                if isinstance(c, ast.Call)
                and (name := self._p2p_kind(c, func.unit)) in (*_P2P_KIND, "batch_isend_irecv")
            ]
            if not calls:
                continue
            found = True
            if func.unit.report:
                self._handles(func, calls)
        tops = _top_levels(self.an)
        if not found and not any(
            isinstance(c, ast.Call) and self._p2p_kind(c, f.unit) in _P2P_KIND
            for f in tops
            for c in _own_nodes(f.node.body)
        ):
            return
        for func in [*self.an.funcs, *tops]:  # a script's top level too (review79l M1)
            if func.unit.report:
                self._peers(func)

    # -- handles

    def _handles(self, func: _Func, calls: list[tuple[ast.Call, str]]) -> None:
        nodes = list(_own_nodes(func.node.body))
        everything = list(ast.walk(func.node))
        for call, name in calls:
            kept = next(
                (
                    n
                    for n in nodes
                    if isinstance(n, ast.Assign)
                    and n.value is call
                    and len(n.targets) == 1
                    and isinstance(n.targets[0], ast.Name)
                ),
                None,
            )
            listed = next(
                (
                    n.func.value.id
                    for n in nodes
                    if isinstance(n, ast.Call)
                    and isinstance(n.func, ast.Attribute)
                    and n.func.attr == "append"
                    and isinstance(n.func.value, ast.Name)
                    and n.args
                    and n.args[0] is call
                ),
                None,
            )
            handle = kept.targets[0].id if kept is not None else listed  # type: ignore[union-attr]
            if handle is None:
                continue
            uses = [
                n
                for n in everything
                if isinstance(n, ast.Name)
                and n.id == handle
                and isinstance(n.ctx, ast.Load)
                and not (listed is not None and self._appends(n, everything))
            ]
            if not uses:
                self._never_waited(func, call, name, handle, listed is not None)
            elif name == "irecv" and kept is not None and call.args and isinstance(call.args[0], ast.Name):
                self._read_before_wait(func, call, kept, handle, call.args[0].id, nodes)

    @staticmethod
    def _appends(name: ast.Name, everything: list[ast.AST]) -> bool:
        return any(isinstance(n, ast.Attribute) and n.value is name and n.attr == "append" for n in everything)

    def _never_waited(self, func: _Func, call: ast.Call, name: str, handle: str, listed: bool) -> None:
        unit = func.unit
        if id(call) in self.an.found:
            return
        held = f"appends its Work handle to `{handle}`" if listed else f"keeps its Work handle in `{handle}`"
        why = (
            f"`dist.{name}` returns at once and this line {held}, but no line of `{func.key}` uses `{handle}` again: "
            "nothing waits for the "
            + ("send" if name == "isend" else "receive" if name == "irecv" else "calls")
            + " before the function returns and drops the handle: a read of a received tensor may see it unwritten, "
            "a change of a sent one before the send completes may be what is sent, and an error in the call is never "
            "raised (barrierlab run on 2 ranks of an isend kept and never waited: the message arrived that time; "
            "nothing in the program makes sure of it)"
        )
        fix = (
            f"call `{handle}.wait()` (for a list: `for work in {handle}: work.wait()`) before the tensor is read or "
            "changed and before the function returns"
        )
        _record_finding(self.an, call, unit, "unwaited-async", f"{handle} never waited", why, fix)

    def _read_before_wait(
        self, func: _Func, call: ast.Call, assign: ast.Assign, handle: str, tensor: str, nodes: list[ast.AST]
    ) -> None:
        block = _holding_block(assign, nodes)
        if block is None:
            return
        unit = func.unit
        for statement in block[block.index(assign) + 1 :]:
            if any(isinstance(n, ast.Name) and n.id == handle for n in ast.walk(statement)):
                return
            use = _bare_use(statement, tensor)
            if use is not None:
                if id(call) in self.an.found:
                    return
                line = use.lineno + unit.offset
                why = (
                    f"`{handle} = dist.irecv({tensor}, ...)` returns at once, and line {line} uses `{tensor}` before "
                    f"`{handle}.wait()`: the message may not have arrived yet, so the rank reads the tensor's old "
                    "values or a mix, from run to run"
                )
                fix = f"call `{handle}.wait()` before line {line}"
                _record_finding(self.an, call, unit, "read-before-wait", f"{tensor} used at line {line}", why, fix)
                return
            if isinstance(statement, (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try)):
                return

    # -- peers

    def _keys_with_p2p(self) -> set[str]:
        """Functions of the file that make a point-to-point call, themselves or through functions they call."""
        if self._p2p_keys is not None:
            return self._p2p_keys
        callees: dict[str, set[str]] = {}
        keys: set[str] = set()
        for func in self.an.funcs:
            targets = set()
            for call in (c for c in _own_nodes(func.node.body) if isinstance(c, ast.Call)):
                kind = self._p2p_kind(call, func.unit)
                if kind in _P2P_KIND or kind == "batch_isend_irecv":
                    keys.add(func.key)
                found = self.an.classify(call, func.unit, func.self_class, func.key)
                if found is not None and found.kind == "call":
                    targets.add(found.target)
            callees[func.key] = targets
        changed = True
        while changed:
            changed = False
            for key, targets in callees.items():
                if key not in keys and targets & keys:
                    keys.add(key)
                    changed = True
        self._p2p_keys = keys
        return keys

    def _peers(self, func: _Func) -> None:
        unit = func.unit
        nodes = list(_own_nodes(func.node.body))
        p2p = [(c, k) for c in nodes if isinstance(c, ast.Call) and (k := self._p2p_kind(c, unit)) is not None]
        if not any(k in _P2P_KIND for _, k in p2p):
            return
        if any(k not in _P2P_KIND and k in ("batch_isend_irecv", "P2POp") for _, k in p2p):
            return
        if any(kw.arg in _P2P_GROUPED for c, k in p2p if k in _P2P_KIND for kw in c.keywords):
            return
        if self.an.called_only_under_rank_test(func.key):
            return
        if len({_P2P_KIND[k] for _, k in p2p if k in _P2P_KIND}) < 2 and any(
            scope is not None for _, scope, _ in self.an._call_sites(func.key)
        ):
            return  # one side of an exchange, called by another function: the other side is elsewhere
        params = [a.arg for a in (*func.node.args.posonlyargs, *func.node.args.args, *func.node.args.kwonlyargs)]
        assigned: dict[str, list[ast.expr]] = {}
        for node in nodes:
            for name in (
                _assigned_names(node)
                if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.With, ast.NamedExpr))
                else ()
            ):
                assigned.setdefault(name, []).append(getattr(node, "value", None))
        ranks = {p for p in params if p in _RANK_PARAMETERS and p not in assigned}
        worlds = {p for p in params if p in _WORLD_PARAMETERS and p not in assigned}
        for name, values in assigned.items():
            if len(values) == 1 and isinstance(values[0], ast.Call) and not values[0].args:
                called = _terminal(values[0].func)
                if called == "get_rank":
                    ranks.add(name)
                elif called == "get_world_size":
                    worlds.add(name)
        _paired_rank_names(nodes, assigned, ranks, worlds)  # lintrecall32
        peers = []
        for call, kind in p2p:
            if kind in _P2P_KIND:
                peer = _argument(call, 1, _P2P_PEER[_P2P_KIND[kind]])
                if isinstance(peer, ast.Constant) and isinstance(peer.value, int):
                    peers.append(peer.value)
        world = self.an.world_size or max([2, *(p + 1 for p in peers)])
        if world > 64:
            return
        paths: list[list[tuple[str, object, ast.Call]]] = []
        for rank in range(world):
            env: dict[str, object] = {"<rank>": rank, "<world>": world}
            env.update({n: rank for n in ranks})
            env.update({n: world for n in worlds})
            out: list[tuple[str, object, ast.Call]] = []
            try:
                self._walk(func, func.node.body, env, out)
            except _Unknown:
                return
            paths.append(out)
        for rank, path in enumerate(paths):
            for kind, peer, call in path:
                if not isinstance(peer, int) or isinstance(peer, bool) or peer == rank or not 0 <= peer < world:
                    continue
                want = "recv" if kind == "send" else "send"
                if any(k == want and (p is None or p == rank or not isinstance(p, int)) for k, p, _ in paths[peer]):
                    continue
                self._unmatched(func, call, kind, rank, peer, world, paths[peer])

    def _walk(self, func: _Func, stmts: list[ast.stmt], env: dict[str, object], out: list) -> bool:
        """Append this rank's point-to-point calls in ``stmts`` to ``out``; True when the statements leave."""
        for stmt in stmts:
            if isinstance(stmt, _SCOPES):
                continue
            if isinstance(stmt, ast.If):
                try:
                    taken = _rank_value(stmt.test, env)
                except _Unknown:
                    if self._matters(func, stmt):
                        taken = self._counted_test(func, stmt.test, env)  # lintrecall32: raises _Unknown if unproved
                    else:
                        continue
                self._collect(func, stmt.test, env, out)
                if self._walk(func, stmt.body if taken else stmt.orelse, env, out):
                    return True
            elif isinstance(stmt, (ast.Return, ast.Raise)):
                self._collect(func, stmt, env, out)
                return True
            elif isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
                head = stmt.test if isinstance(stmt, ast.While) else stmt.iter
                self._collect(func, head, env, out)
                changed = {name for n in ast.walk(stmt) for name in _assigned_names(n)}
                inner = {k: v for k, v in env.items() if k not in changed}
                self._walk(func, stmt.body, inner, out)
                self._walk(func, stmt.orelse, inner, out)
            elif isinstance(stmt, (ast.With, ast.AsyncWith)):
                for item in stmt.items:
                    self._collect(func, item.context_expr, env, out)
                if self._walk(func, stmt.body, env, out):
                    return True
            elif isinstance(stmt, (ast.Try, getattr(ast, "TryStar", ast.Try))):
                if any(self._matters(func, h) for h in stmt.handlers):
                    raise _Unknown
                if self._walk(func, stmt.body, env, out) or self._walk(func, stmt.orelse, env, out):
                    return True
                if self._walk(func, stmt.finalbody, env, out):
                    return True
            elif isinstance(stmt, ast.Match):
                if self._matters(func, stmt):
                    raise _Unknown
            else:
                self._collect(func, stmt, env, out)
        return False

    # -- lintrecall32: a test on the data a function is handed, evaluated on each rank

    def _counted_test(self, func: _Func, test: ast.expr, env: dict[str, object]) -> bool:
        """The value, on the rank of ``env``, of an ``if`` test that reads only parameters of ``func`` the function
        never rebinds (round 25's ``if not rows: return`` before a baton ``recv``/``send`` chain), when the file
        calls ``func`` from exactly one place and :class:`_ShareCounter` evaluates that call's arguments there with
        the rank and the world size as numbers (``rows = predict(model, load_shard(rank, world_size))``: a list
        whose length it counts). Anything else raises :class:`_Unknown`: the walk then says nothing."""
        node = func.node
        if func.self_class is not None or isinstance(node, ast.AsyncFunctionDef):
            raise _Unknown
        args = node.args
        if args.vararg or args.kwarg or args.posonlyargs or args.kwonlyargs:
            raise _Unknown
        params = [a.arg for a in args.args]
        read = {n.id for n in ast.walk(test) if isinstance(n, ast.Name)}
        if not read or not read <= set(params) or any(isinstance(n, ast.Call) for n in ast.walk(test)):
            raise _Unknown
        rebound = {name for n in _own_nodes(node.body) for name in _assigned_names(n)}
        if read & rebound:
            raise _Unknown
        sites = self.an._call_sites(func.key)
        if len(sites) != 1:
            raise _Unknown
        call, scope, unit = sites[0]
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            raise _Unknown
        given: dict[str, ast.expr] = dict(zip(params, call.args))
        given.update({k.arg: k.value for k in call.keywords if k.arg in params})
        rank, world = env.get("<rank>"), env.get("<world>")
        if not isinstance(rank, int) or not isinstance(world, int) or not read <= set(given):
            raise _Unknown
        counter = _ShareCounter(self.an, unit, rank, world)
        try:
            local = {name: counter.value(given[name], scope, {}, 0) for name in read}
            taken = counter._truth(counter.value(test, func.key, local, 0))
        except (_NoCount, RecursionError):
            raise _Unknown from None
        self._decided.setdefault((func.key, rank), []).append((test, taken, call.lineno + unit.offset))
        return taken

    def _decided_note(self, func: _Func, rank: int) -> tuple[str, int | None]:
        """What :meth:`_unmatched` adds when rank ``rank``'s way was decided by data tests (lintrecall32): a
        sentence and the line of the first such test."""
        decided = self._decided.get((func.key, rank))
        if not decided:
            return "", None
        unit = func.unit
        test, taken, site = decided[0]
        return (
            f"; on rank {rank}, `{unit.text(test)}` (line {test.lineno + unit.offset}) is {taken}, evaluated on what "
            f"the file's only call of `{func.key}` (line {site}) hands it on that rank, so rank {rank} takes the "
            f"{'if' if taken else 'else'} branch",
            test.lineno + unit.offset,
        )

    def _matters(self, func: _Func, node: ast.AST) -> bool:
        """Whether ``node`` holds a point-to-point call (or a call of a function that makes one) or a leaving."""
        for n in _own_nodes([node]):
            if isinstance(n, (ast.Return, ast.Raise)):
                return True
            if isinstance(n, ast.Call):
                if self._p2p_kind(n, func.unit) is not None and self._p2p_kind(n, func.unit) in (
                    *_P2P_KIND,
                    "batch_isend_irecv",
                ):
                    return True
                found = self.an.classify(n, func.unit, func.self_class, func.key)
                if found is not None and found.kind == "call" and found.target in self._keys_with_p2p():
                    return True
        return False

    def _collect(self, func: _Func, node: ast.AST, env: dict[str, object], out: list) -> None:
        for call in _calls_in_order(node):
            kind = self._p2p_kind(call, func.unit)
            if kind in _P2P_KIND:
                direction = _P2P_KIND[kind]
                peer_node = _argument(call, 1, _P2P_PEER[direction])
                try:
                    peer = _rank_value(peer_node, env) if peer_node is not None else None
                except _Unknown:
                    peer = "?"
                out.append((direction, peer, call))
                continue
            found = self.an.classify(call, func.unit, func.self_class, func.key)
            if found is not None and found.kind == "call" and found.target in self._keys_with_p2p():
                raise _Unknown

    def _unmatched(
        self, func: _Func, call: ast.Call, kind: str, rank: int, peer: int, world: int, theirs: list
    ) -> None:
        if id(call) in self.an.found:
            return
        unit = func.unit
        where = "the script's top level" if func.key == _TOP else f"`{func.key}`"
        made = sorted({f"{k} ({'any' if p is None else p})" for k, p, _ in theirs})
        did = f"only {', '.join(made)}" if made else "no point-to-point call"
        states = f"the world size the file states ({world})" if self.an.world_size else f"{world} ranks"
        if kind == "recv":
            why = (
                f"on {states}, rank {rank} waits here for a message from rank {peer}, but rank {peer}'s way "
                f"through {where} (its tests on the rank evaluated) makes {did}, no send to rank {rank}: the "
                f"receive waits until the timeout, or fails on gloo when rank {peer} ends its process ('Connection "
                "closed by peer')"
            )
            fix = f"make rank {peer} send to rank {rank} (dist.send(t, dst={rank})) on its branch, or receive from the rank that sends"
        else:
            why = (
                f"on {states}, rank {rank} sends here to rank {peer}, but rank {peer}'s way through "
                f"{where} (its tests on the rank evaluated) makes {did}, no receive from rank {rank}: nothing "
                "takes the message, so a blocking send (or the wait of an isend) waits until the timeout on gloo, or "
                f"fails when rank {peer} ends its process"
            )
            fix = f"make rank {peer} receive from rank {rank} (dist.recv(t, src={rank})) on its branch, or send to the rank that receives"
        note, test_line = self._decided_note(func, peer)  # lintrecall32
        if note:
            why += note
            fix += f", or let rank {peer} make its point-to-point calls whatever its data (an empty share too)"
        _record_finding(
            self.an,
            call,
            unit,
            "p2p-unmatched",
            f"rank {rank} {kind} {'from' if kind == 'recv' else 'to'} rank {peer}",
            why,
            fix,
            condition_line=test_line,
        )


def _paired_rank_names(
    nodes: list[ast.AST], assigned: dict[str, list[ast.expr | None]], ranks: set[str], worlds: set[str]
) -> None:
    """lintrecall32: ``rank, world_size = dist.get_rank(), dist.get_world_size()`` - names bound once, by a tuple
    assignment, to ``get_rank()``/``get_world_size()`` with no arguments, added to ``ranks``/``worlds``."""
    for node in nodes:
        if not (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Tuple)
            and isinstance(node.value, ast.Tuple)
            and len(node.targets[0].elts) == len(node.value.elts)
        ):
            continue
        for target, value in zip(node.targets[0].elts, node.value.elts):
            if not isinstance(target, ast.Name) or len(assigned.get(target.id, [])) != 1:
                continue
            if isinstance(value, ast.Call) and not value.args and not value.keywords:
                called = _terminal(value.func)
                if called == "get_rank":
                    ranks.add(target.id)
                elif called == "get_world_size":
                    worlds.add(target.id)


class _RingPeers:
    """lintrecall32: ``p2p-unmatched`` for a ring exchange whose peers a communicator class of the file keeps
    (round 15's ``buggy_ring_attention_recv_from_next``, modelled on ring-flash-attention's ``RingComm``):
    ``self.send_rank``/``self.recv_rank`` set once in ``__init__`` from the rank and the world size, and a
    method that makes both ``P2POp(dist.isend, t, self.send_rank)`` and ``P2POp(dist.irecv, t, self.recv_rank)``
    (or ``dist.isend``/``dist.irecv``) at its top level, so every rank that posts the receive posts its send too.
    lint evaluates both peers on every rank of the world the file states (else 2). When every send-kind call of
    the file is one of these sends, rank ``s``'s receive from ``p = recv(s)`` has a partner only if ``send(p) ==
    s``; when that fails the receive (and the wait on it) never completes. Quiet on anything it cannot evaluate:
    a group argument, a peer read from elsewhere, a send of the file it cannot account for."""

    def __init__(self, an: _Analysis) -> None:
        self.an = an

    def _kind(self, call: ast.Call, unit: _Unit) -> str | None:
        full = self.an._resolve(call.func, unit) if _dotted(call.func) else ""
        full = full.replace("torch.distributed.distributed_c10d.", "torch.distributed.")
        module, _, name = full.rpartition(".")
        if module != "torch.distributed":
            return None
        if name == "P2POp" and call.args and _dotted(call.args[0]):
            op = self.an._resolve(call.args[0], unit).replace(
                "torch.distributed.distributed_c10d.", "torch.distributed."
            )
            return {"torch.distributed.isend": "send", "torch.distributed.irecv": "recv"}.get(op, "other")
        return _P2P_KIND.get(name)  # batch_isend_irecv posts the P2POps counted where they are built

    @staticmethod
    def _peer(call: ast.Call) -> ast.expr | None:
        if _terminal(call.func) == "P2POp":
            given = (
                call.args[2] if len(call.args) > 2 else next((k.value for k in call.keywords if k.arg == "peer"), None)
            )
        else:
            given = _argument(call, 1, "dst" if _terminal(call.func) in ("send", "isend") else "src")
        if any(k.arg in ("group_peer", "group_src", "group_dst") for k in call.keywords) or (
            _terminal(call.func) == "P2POp" and len(call.args) > 3
        ):
            return None
        return given

    @staticmethod
    def _default_group(call: ast.Call, sets: dict, defaults: set[str]) -> bool:
        """Whether the call's ``group=`` is absent, ``None``, or ``self.<attr>`` set once from a parameter of
        ``__init__`` whose default is ``None`` (which :meth:`_built_plain` checks no construction passes)."""
        for k in call.keywords:
            if k.arg != "group":
                continue
            v = k.value
            if isinstance(v, ast.Constant) and v.value is None:
                continue
            if isinstance(v, ast.Attribute) and _dotted(v.value) == "self":
                held = sets.get(v.attr, [])
                if len(held) == 1 and isinstance(held[0], ast.Name) and held[0].id in defaults:
                    continue
            return False
        return True

    def run(self) -> None:
        sends: list[tuple[ast.Call, _Func]] = []
        pairs: list[tuple[_Func, ast.Call]] = []
        for func in self.an.funcs:
            found = [
                (c, k)
                for c in _own_nodes(func.node.body)
                if isinstance(c, ast.Call) and (k := self._kind(c, func.unit))
            ]
            sends += [(c, func) for c, k in found if k == "send"]
            if any(k == "other" for _, k in found):
                return  # an exchange lint does not model (send_object_list, batch of ops built elsewhere)
            top = [
                c
                for stmt in func.node.body
                if isinstance(stmt, (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return))
                for c in _calls_in_order(stmt)
            ]
            s_calls = [c for c, k in found if k == "send" and c in top]
            r_calls = [c for c, k in found if k == "recv" and c in top]
            if len(s_calls) + len(r_calls) == len(found) and s_calls and r_calls:  # every call at the top level
                pairs.extend((func, r) for r in r_calls)
        if not pairs or any(not isinstance(self._peer(c), ast.Attribute) for c, _ in sends):
            return
        world = self.an.world_size or 2
        if not 2 <= world <= 64:
            return
        for func, recv in pairs:
            if func.self_class is None or not func.unit.report or id(recv) in self.an.found:
                continue
            if self.an.called_only_under_rank_test(func.key):
                continue
            peers = self._values(
                func, [self._peer(c) for c, _ in sends] + [self._peer(recv)], world, [c for c, _ in sends] + [recv]
            )
            if peers is None:
                continue
            *send_to, recv_from = peers
            if not all(isinstance(p, int) and 0 <= p < world for p in recv_from):
                continue
            lonely = [s for s in range(world) if recv_from[s] != s and not any(to[recv_from[s]] == s for to in send_to)]
            if lonely:
                self._report(func, recv, lonely, recv_from, send_to, world)

    def _values(
        self, func: _Func, peers: list[ast.expr | None], world: int, calls: list[ast.Call]
    ) -> list[list[object]] | None:
        """Each peer, ``self.<attr>`` set once in the class's ``__init__``, on every rank; None if any is unknown."""
        cls = func.self_class
        init = self.an.table.get(f"{cls}.__init__")
        if init is None or not all(isinstance(p, ast.Attribute) and _dotted(p.value) == "self" for p in peers):
            return None
        sets: dict[str, list[ast.expr]] = {}
        for key, other in self.an.table.items():
            if other.self_class != cls:
                continue
            for n in _own_nodes(other.node.body):
                targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, ast.AugAssign) else []
                for t in targets:
                    for e in t.elts if isinstance(t, ast.Tuple) else [t]:
                        if isinstance(e, ast.Attribute) and _dotted(e.value) == "self":
                            sets.setdefault(e.attr, []).append(
                                n.value
                                if key == init.key and isinstance(n, ast.Assign) and not isinstance(t, ast.Tuple)
                                else None
                            )  # type: ignore[arg-type]
        defaults = _none_defaults(init.node)
        if not self._built_plain(cls, defaults) or not all(self._default_group(c, sets, defaults) for c in calls):
            return None
        out = []
        for peer in peers:
            row = []
            for rank in range(world):
                try:
                    row.append(self._eval(peer, sets, defaults, {"<rank>": rank, "<world>": world}, 0))
                except _Unknown:
                    return None
            out.append(row)
        return out

    def _eval(self, node: ast.expr, sets: dict, defaults: set[str], env: dict[str, int], depth: int) -> object:
        if depth > 8:
            raise _Unknown
        if isinstance(node, ast.Attribute) and _dotted(node.value) == "self":
            values = sets.get(node.attr, [])
            if len(values) != 1 or values[0] is None:
                raise _Unknown
            return self._eval(values[0], sets, defaults, env, depth + 1)
        if isinstance(node, ast.Call) and _terminal(node.func) in ("get_rank", "get_world_size"):
            if (
                node.keywords
                or len(node.args) > 1
                or (node.args and not (isinstance(node.args[0], ast.Name) and node.args[0].id in defaults))
            ):
                raise _Unknown  # a group lint cannot see is None
            return env["<rank>" if _terminal(node.func) == "get_rank" else "<world>"]
        if isinstance(node, ast.BinOp):
            left = self._eval(node.left, sets, defaults, env, depth + 1)
            right = self._eval(node.right, sets, defaults, env, depth + 1)
            if not isinstance(left, int) or not isinstance(right, int):
                raise _Unknown
            copy = ast.BinOp(left=ast.Constant(left), op=node.op, right=ast.Constant(right))
            return _rank_value(copy, env)
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            return node.value
        raise _Unknown

    def _built_plain(self, cls: str, defaults: set[str]) -> bool:
        """Whether every construction of ``cls`` in the file leaves the ``None``-default parameters ``defaults``
        (the group its rank and world size are read from) unset, and there is at least one."""
        sites = self.an._call_sites(f"{cls}.__init__")
        return bool(sites) and all(not c.args and not c.keywords for c, _, _ in sites) if defaults else bool(sites)

    def _report(
        self, func: _Func, recv: ast.Call, lonely: list[int], recv_from: list, send_to: list[list], world: int
    ) -> None:
        unit = func.unit
        peer = self._peer(recv)
        assert isinstance(peer, ast.Attribute)
        cls = func.self_class
        states = f"the world size the file states ({world})" if self.an.world_size else f"{world} ranks"
        line = next(
            (
                n.lineno + unit.offset
                for n in ast.walk(self.an.table[f"{cls}.__init__"].node)
                if isinstance(n, ast.Assign)
                and any(isinstance(t, ast.Attribute) and t.attr == peer.attr for t in n.targets)
            ),
            None,
        )
        s = lonely[0]
        p = recv_from[s]
        sent = " and ".join(sorted({f"rank {to[p]}" for to in send_to}))
        senders = sorted({r for r in range(world) for to in send_to if to[r] == s})
        others = f" (and the same receive on ranks {', '.join(map(str, lonely[1:]))})" if len(lonely) > 1 else ""
        why = (
            f"on {states}, rank {s} posts this receive from `{unit.text(peer)}` = rank {p}, but every send of the "
            f"file is this class's, and rank {p} sends to {sent}, not to rank {s}: rank {s}'s receive{others} waits "
            "for a message no rank sends, so the wait on it blocks until the timeout (a ring's receive must come "
            "from the rank that sends to it)"
        )
        fix = (
            f"set `{unit.text(peer)}` to the rank that sends to this one"
            + (f" (on rank {s}: rank {', '.join(map(str, senders))})" if senders else "")
            + ", or send to the rank that receives from this one"
        )
        _record_finding(
            self.an,
            recv,
            unit,
            "p2p-unmatched",
            f"rank {s} receives from rank {p}, which sends to {sent}",
            why,
            fix,
            condition_line=line,
        )


def _none_defaults(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """lintrecall32: the parameters of ``node`` whose default is ``None``."""
    args = node.args
    positional = [a.arg for a in args.args][len(args.args) - len(args.defaults) :]
    names = {a for a, d in zip(positional, args.defaults) if isinstance(d, ast.Constant) and d.value is None}
    return names | {
        a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults) if isinstance(d, ast.Constant) and d.value is None
    }


_FORK_TARGETS = frozenset({"Process"})


#: ``Join(joinables)`` of torch.distributed.algorithms.join: its context managers. A rank that has run out of
#: inputs leaves its loop and, until every rank has, runs the join hooks of the Joinables it was given, which
#: "shadow the collective communications of non-joined processes" (torch/distributed/algorithms/join.py, ``Join``'s
#: docstring; DDP's ``_DDPJoinHook`` shadows its forward's and backward's all-reduces, ZeroRedundancyOptimizer's its
#: step's broadcasts). A plain torch.distributed collective in the loop belongs to no Joinable: nothing shadows it.
_JOIN_MANAGERS = frozenset({"torch.distributed.algorithms.join.Join", "torch.distributed.algorithms.Join"})
_JOINABLE_BASES = frozenset({"Joinable"})


class _JoinShadows:
    """``rank-dependent-loop`` under ``with Join([...]):`` - a torch.distributed collective made directly in a loop
    inside the block (round 13's ``buggy_join_loss_log_not_joinable``). ``Join`` is there because the ranks' loops
    run different numbers of times; once one rank has left its loop, the others' collective has no partner (or
    pairs with a join hook's all-reduce). Quiet for collectives in a method of a class of the file that derives
    from ``Joinable`` (its own join hook shadows them) and for DDP, ZeRO and framework calls."""

    def __init__(self, an: _Analysis) -> None:
        self.an = an

    def run(self) -> None:
        for unit, body, _taint, _laundered, self_class, key in _gap_scopes(self.an):
            if self_class is not None and any(
                b.rpartition(".")[2] in _JOINABLE_BASES
                for c in self.an._ancestors(self_class)
                for b in self.an.base_names.get(c, [])
            ):
                continue
            for node in _own_nodes(body):
                if not isinstance(node, (ast.With, ast.AsyncWith)):
                    continue
                managers = [
                    i.context_expr
                    for i in node.items
                    if isinstance(i.context_expr, ast.Call)
                    and _dotted(i.context_expr.func)
                    and self.an._resolve(i.context_expr.func, unit) in _JOIN_MANAGERS
                ]
                if managers:
                    self._block(node, managers[0], unit, self_class, key)

    def _block(self, block: ast.With | ast.AsyncWith, manager: ast.Call, unit: _Unit, self_class, key) -> None:
        loops = [n for n in _own_nodes(block.body) if isinstance(n, (ast.For, ast.AsyncFor, ast.While))]
        for loop in loops:
            for stmt in loop.body:
                for call in _calls_in_order(stmt):
                    if id(call) in self.an.found:
                        continue
                    found = self.an.classify(call, unit, self_class, key)
                    if found is None or found.kind != "coll" or not found.target.startswith("torch.distributed."):
                        continue
                    if found.target.rpartition(".")[2] not in COLLECTIVES:
                        continue
                    shown = _dotted(call.func) or unit.text(call.func)
                    joined = unit.text(manager)
                    why = (
                        f"`{shown}` runs in every iteration of the loop at line {loop.lineno + unit.offset}, inside "
                        f"`with {joined}:` (line {block.lineno + unit.offset}), which is there because the ranks' "
                        "loops run different numbers of times. A rank that has run out of inputs leaves the loop and "
                        "runs only the join hooks of the Joinables handed to Join, which shadow their own "
                        f"collectives (DDP's forward and backward all-reduces), not this `{shown}`: the ranks still "
                        "in the loop wait in it for a rank that never calls it, or it pairs with a join hook's "
                        "all-reduce, and from there on the ranks' collectives are out of step "
                        "(torch/distributed/algorithms/join.py)"
                    )
                    fix = (
                        f"move `{shown}` out of the `with {joined}:` block (after it every rank has joined), or make "
                        "it a Joinable's: a class deriving from Joinable that calls Join.notify_join_context(self) "
                        "before the collective and whose join_hook's main_hook makes the same collective, handed "
                        "to Join with the model"
                    )
                    _record_finding(
                        self.an,
                        call,
                        unit,
                        "rank-dependent-loop",
                        f"the loop under `with {joined}:`",
                        why,
                        fix,
                        collective=shown,
                        condition_line=loop.lineno + unit.offset,
                    )


class _Forked:
    """``forked-collective`` - a collective made in a child process this rank starts: ``os.fork()`` and a
    collective in the child's branch (``if pid == 0:``), or ``multiprocessing.Process(target=f)`` (any context's
    ``Process``) where ``f`` reaches a collective and never calls ``init_process_group`` itself (a launcher's child
    that joins a group of its own is quiet)."""

    def __init__(self, an: _Analysis) -> None:
        self.an = an
        self._inits: dict[str, bool] = {}

    def run(self) -> None:
        # review82l C1: no early return on an empty ``reach`` (a script with no functions still forks at its top level)
        for unit, body, _, _, self_class, key in _gap_scopes(self.an):
            nodes = list(_own_nodes(body))
            forks = {
                n.targets[0].id
                for n in nodes
                if isinstance(n, ast.Assign)
                and len(n.targets) == 1
                and isinstance(n.targets[0], ast.Name)
                and isinstance(n.value, ast.Call)
                and _dotted(n.value.func)
                and self.an._resolve(n.value.func, unit) == "os.fork"
            }
            for node in nodes:
                if isinstance(node, ast.Call) and _terminal(node.func) in _FORK_TARGETS:
                    self._process(node, unit, self_class, key)
                if isinstance(node, ast.If):
                    child = self._child_block(node, forks, lambda call, u=unit: self.an._resolve(call.func, u))
                    if child is not None:
                        self._fork_child(child, unit, self_class, key)

    def _initialises(self, key: str, seen: set[str] | None = None) -> bool:
        if key in self._inits:
            return self._inits[key]
        seen = seen if seen is not None else set()
        if key in seen or key not in self.an.table:
            return False
        seen.add(key)
        func = self.an.table[key]
        result = False
        for call in (c for c in _own_nodes(func.node.body) if isinstance(c, ast.Call)):
            if _terminal(call.func) == "init_process_group":
                result = True
                break
            found = self.an.classify(call, func.unit, func.self_class, func.key)
            if found is not None and found.kind == "call" and self._initialises(found.target, seen):
                result = True
                break
        self._inits[key] = result
        return result

    def _process(self, call: ast.Call, unit: _Unit, self_class: str | None, key: str | None) -> None:
        target = next((k.value for k in call.keywords if k.arg == "target"), None)
        if target is None or not _dotted(target):
            return
        callee = self.an._callee(target, self_class, unit)
        if not callee or callee not in self.an.reach or self._initialises(callee):
            return
        if id(call) in self.an.found:
            return
        shown = unit.text(target)
        why = (
            f"`{shown}` reaches a collective ({' -> '.join(self.an.chain(callee))}) and "
            "runs in a child process this rank starts, which is not a rank of the group: with the fork start method "
            "(Linux's default before Python 3.14) the child holds a copy of this rank's process group but not the "
            "threads gloo runs its collectives on (fork copies only the calling thread), so its collective is "
            "queued and never runs, not even to the timeout, and a rank that joins the child waits for ever "
            "(barrierlab run on 2 ranks: every rank waited in p.join() until the deadline; with a join timeout the "
            "ranks went on and their next barrier completed without the child); with spawn or forkserver it has no process "
            "group at all and raises that the default process group has not been initialized"
        )
        fix = (
            "make the collective in the rank itself, before starting the child or after joining it, and hand the "
            "child only the data (a child that needs a group of its own must call init_process_group with its own "
            "rendezvous)"
        )
        _record_finding(self.an, call, unit, "forked-collective", f"{shown} in a child process", why, fix)

    @staticmethod
    def _child_block(node: ast.If, forks: set[str], resolve) -> list[ast.stmt] | None:
        test = node.test

        def forked(expr: ast.expr) -> bool:
            # a name bound from os.fork(), or os.fork() itself (review82l C2: ``if os.fork() == 0:``)
            if isinstance(expr, ast.Name):
                return expr.id in forks
            return isinstance(expr, ast.Call) and not expr.args and _dotted(expr.func) and resolve(expr) == "os.fork"

        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return node.body if forked(test.operand) else None
        if isinstance(test, (ast.Name, ast.Call)):
            return node.orelse if forked(test) else None
        if (
            isinstance(test, ast.Compare)
            and len(test.ops) == 1
            and forked(test.left)
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == 0
        ):
            if isinstance(test.ops[0], ast.Eq):
                return node.body
            if isinstance(test.ops[0], (ast.NotEq, ast.Gt)):
                return node.orelse
        return None

    def _fork_child(self, block: list[ast.stmt], unit: _Unit, self_class: str | None, key: str | None) -> None:
        for call in (c for c in _own_nodes(block) if isinstance(c, ast.Call)):
            found = self.an.classify(call, unit, self_class, key)
            if found is None or not (found.kind == "coll" or found.target in self.an.reach):
                continue
            if id(call) in self.an.found:
                continue
            why = (
                "this line runs in the child process os.fork() made, which is not a rank of the group: it holds a "
                "copy of this rank's process group but not the threads gloo runs its collectives on (fork copies "
                "only the calling thread), so its collective is queued and never runs, not even to the timeout, and "
                "a parent that waits for the child (os.waitpid) waits for ever (barrierlab run on 2 ranks: the "
                "children's all_reduce never returned and the ranks waited in os.waitpid until the deadline; the "
                "parents' own all_reduce and barrier completed without the child's value)"
            )
            fix = "make the collective in the parent (the rank) before forking or after waiting for the child; let the child only compute"
            _record_finding(self.an, call, unit, "forked-collective", "in the child of os.fork()", why, fix)


def _padded_key(node: ast.AST | None) -> str | None:
    """``batch["input_ids"]`` (or ``batch.input_ids``): a padded token batch."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and node.slice.value in _PADDED_KEYS:
        return str(node.slice.value)
    if isinstance(node, ast.Attribute) and node.attr in _PADDED_KEYS:
        return node.attr
    return None


#: Calls whose result has one Python type whatever their argument: ``float(total)`` is a float on every rank.
_CONVERSIONS = frozenset(("float", "int", "bool", "complex"))


def _walk_unconverted(value: ast.AST):
    """``ast.walk`` of ``value`` that does not go inside a conversion call (:data:`_CONVERSIONS`)."""
    todo = collections.deque([value])
    while todo:
        node = todo.popleft()  # in ast.walk's order
        yield node
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _CONVERSIONS:
            continue
        todo.extend(ast.iter_child_nodes(node))


def _typed(value: ast.expr) -> bool:
    """Whether an added value has one Python type whatever the data: a number literal, ``float(...)``,
    ``len(...)``, ``x.item()``... (a comparison's bool counts: it adds as an int)."""
    if isinstance(value, ast.Constant):
        return isinstance(value.value, (int, float))
    if isinstance(value, ast.Call):
        if isinstance(value.func, ast.Attribute) and value.func.attr in _TENSOR_RESULTS:
            return True  # a tensor's reduction keeps the tensor's dtype, the same on every rank
        return _terminal(value.func) in _TYPED_CALLS or (_dotted(value.func) or "") in _TYPED_CALLS
    if isinstance(value, ast.BinOp):
        return _typed(value.left) and _typed(value.right)
    if isinstance(value, ast.UnaryOp):
        return _typed(value.operand)
    return False


def _sliced(target: ast.Subscript) -> bool:
    """``x[a:b]`` or ``x[:, 0:n]``: a slice of a sequence or tensor, never a dict's key."""
    index = target.slice
    return isinstance(index, ast.Slice) or (
        isinstance(index, ast.Tuple) and any(isinstance(e, ast.Slice) for e in index.elts)
    )


#: ``nn.Module`` methods that walk its parameters, buffers or submodules: as many on every rank built alike.
_MODULE_WALKS = frozenset(
    {
        "parameters",
        "named_parameters",
        "buffers",
        "named_buffers",
        "children",
        "named_children",
        "modules",
        "named_modules",
    }
)

#: Calls whose result is a tensor or list: assigning to one of its items changes a value, not the size.
_FIXED_SIZE_CALLS = _FACTORIES | {
    "tensor",
    "as_tensor",
    "zeros_like",
    "ones_like",
    "full_like",
    "empty_like",
    "rand_like",
    "randn_like",
    "list",
}


def _not_a_dict(value: ast.expr) -> bool:
    """Whether ``value`` is plainly a list or a tensor (``[0] * world_size``, ``torch.tensor([...])``,
    ``torch.zeros(n)``, a list comprehension), not a dict: ``value[k] = v`` adds no key to it."""
    if isinstance(value, (ast.List, ast.ListComp)):
        return True
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult):
        return isinstance(value.left, ast.List) or isinstance(value.right, ast.List)
    return isinstance(value, ast.Call) and _terminal(value.func) in _FIXED_SIZE_CALLS


def _keyed_names(stmts: list[ast.stmt]) -> set[str]:
    """Dicts a block adds keys to or removes keys from (``d[k] = v``, ``d.update(...)``, ``del d[k]``). A slice
    assigned (``buf[:n] = data``: a fixed-size buffer filled on one rank, mmengine's ``collect_results_cpu``)
    adds no key: dicts are not sliced."""
    names: set[str] = set()
    for node in _own_nodes(stmts):
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and not _sliced(target):
                    names.add(target.value.id)
        elif isinstance(node, ast.Delete):
            names.update(
                t.value.id for t in node.targets if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name)
            )
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("update", "setdefault", "pop")
            and isinstance(node.func.value, ast.Name)
        ):
            names.add(node.func.value.id)
    return names


# --------------------------------------------------------------------------- which ranks a group holds


class _Opaque:
    """A value the interpreter cannot know (a tensor, a file's contents, a call it does not model)."""

    def __repr__(self) -> str:
        return "?"


_OPAQUE = _Opaque()


class _Stop(Exception):
    """The interpreter reached the ``if`` it was asked about, or gave up."""


@dataclass(frozen=True)
class _Group:
    members: frozenset[int]


class _Ranks:
    """A small interpreter of one function's integer and list arithmetic, run once per rank of sample
    worlds (4, 8 and 12 ranks; every free integer such as ``tp_size`` set to each divisor of the world
    size up to 4), to learn, at an ``if``, the test's value and the process group a call uses. It models
    ``get_rank``/``get_world_size`` (also of a group), ``new_group``, ``new_subgroups``,
    ``new_subgroups_by_enumeration``, ``range``/``list``/``len``..., list comprehensions, ``for`` over
    known lists and calls to functions of the file; anything else is opaque, and an opaque test or group
    means "cannot tell" (the finding stays)."""

    WORLDS = (4, 8, 12)
    _STEPS = 20000

    def __init__(self, an: _Analysis, func: _Func) -> None:
        self.an, self.func = an, func
        self.strict = False

    def agrees(self, test: ast.expr, group: ast.expr) -> bool:
        """Whether, in every sample world the code allows, the ranks that take the branch of ``test`` are
        exactly the members of ``group`` (as seen by each of them). A world the code cannot run in (a device
        mesh of fixed shape 2 x 2 in a world of 8) is skipped; at least one must remain."""
        if self._agrees(test, group, self.func):
            return True
        # The group may be a parameter (``decode_step(token, tp_group)``): run each function of the file that
        # calls this one instead, with the values it hands over; every caller must agree.
        callers = self._callers()
        return bool(callers) and all(self._agrees(test, group, caller) for caller in callers)

    def _callers(self) -> list[_Func]:
        out = []
        for func in self.an.funcs:
            if func.key == self.func.key or func.unit is not self.func.unit:
                continue
            for node in _own_nodes(func.node.body):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Name)
                    and self.an._callee(node.func, None, func.unit) == self.func.key
                ):
                    out.append(func)
                    break
        return out[:4] if len(out) <= 4 else []

    def _agrees(self, test: ast.expr, group: ast.expr, entry: _Func) -> bool:
        self.entry = entry
        free: list[str] = []
        self.rank, self.values = 0, {}
        self._seen = free
        for world in self.WORLDS:  # learn the free names in the first world the code can run in
            self.world = world
            try:
                if self._probe(test, group) is None:
                    return False
                break
            except _Impossible:
                continue
        else:
            return False
        tested = 0
        for world in self.WORLDS:
            choices = [d for d in (1, 2, 3, 4) if world % d == 0]
            for combo in itertools.product(choices, repeat=len(free)):
                self.values = dict(zip(free, combo))
                self.world = world
                per_rank = []
                try:
                    for rank in range(world):
                        self.rank = rank
                        seen = self._probe(test, group)
                        if seen is None:
                            return False
                        per_rank.append(seen)
                except _Impossible:
                    continue
                if not self._consistent(per_rank):
                    return False
                tested += 1
        return tested > 0

    def outsider(self, stmt: ast.stmt, group: ast.expr) -> tuple[int, int, frozenset[int]] | None:
        """A (world, rank, members) where ``rank`` runs ``stmt`` (a call on ``group``) and ``group`` is a known
        process group without it; None if no sample world shows one. Strict: an opaque test, loop or ``with``
        that could leave the function before ``stmt`` stops the run (no witness)."""
        funcs = [self.func]
        if any(isinstance(n, ast.Name) and n.id in {a.arg for a in self.func.node.args.args} for n in ast.walk(group)):
            funcs = self._callers()
        for entry in funcs:
            self.entry, self.values, self._seen = entry, {}, []
            # review81l F2: a file that states its world size (WORLD_SIZE = 4) runs in that world only
            for world in (self.an.world_size,) if self.an.world_size else self.WORLDS:
                self.world = world
                for rank in range(world):
                    self.rank = rank
                    try:
                        seen = self._probe(stmt, group, strict=True)
                    except _Impossible:
                        break
                    if seen is None:
                        continue
                    _, members = seen
                    if rank not in members and members:
                        return world, rank, members
        return None

    @staticmethod
    def _consistent(per_rank: list[tuple[bool, frozenset[int]]]) -> bool:
        for rank, (taken, members) in enumerate(per_rank):
            if rank not in members:
                continue  # a call on a group the rank is not in does nothing
            if any(not (0 <= m < len(per_rank)) or per_rank[m] != (taken, members) for m in members):
                return False
        return True

    def _probe(self, test: ast.AST, group: ast.expr, strict: bool = False) -> tuple[bool, frozenset[int]] | None:
        self.steps = 0
        self.strict = strict
        self.target = (test, group)
        self.found: tuple[Any, Any] | None = None
        self.globals: dict[str, Any] = {}  # module names assigned by functions that declare them global
        env: dict[str, Any] = {}
        for arg in self.entry.node.args.args:
            if arg.arg not in ("self", "cls"):
                env[arg.arg] = self._free(arg.arg)
        try:
            self._exec(self.entry.node.body, env, 0)
        except (_Stop, _Return, RecursionError):
            pass
        if self.found is None:
            return None
        taken, held = self.found
        if not isinstance(taken, (bool, int)) or not isinstance(held, _Group):
            return None
        return bool(taken), held.members

    def _free(self, name: str) -> Any:
        if name in ("world", "world_size", "num_replicas", "num_processes", "nprocs"):
            return self.world
        if _rank_name(name):
            return self.rank
        if name not in self.values:
            if name not in self._seen:
                self._seen.append(name)
            return 1
        return self.values[name]

    # -- statements

    def _exec(self, stmts: list[ast.stmt], env: dict[str, Any], depth: int) -> Any:
        """Run ``stmts``; a ``return`` raises _Return with its value."""
        for stmt in stmts:
            self.steps += 1
            if self.steps > self._STEPS:
                raise _Stop
            if stmt is self.target[0]:  # a statement as the target (see outsider): reached
                self.found = (True, self._eval(self.target[1], env, depth))
                raise _Stop
            if self.strict and isinstance(stmt, (ast.If, ast.For, ast.While, ast.With, ast.Try, ast.Match)):
                leaves = any(isinstance(n, (ast.Return, ast.Raise, ast.Break, ast.Continue)) for n in ast.walk(stmt))
                if leaves and isinstance(stmt, ast.If) and self._eval(stmt.test, env, depth) is _OPAQUE:
                    raise _Stop  # an opaque test that may leave before the target: cannot tell
                if leaves and not isinstance(stmt, ast.If):
                    raise _Stop
            if isinstance(stmt, ast.If):
                if stmt.test is self.target[0]:  # in the function that holds it, whichever called it
                    self.found = (self._eval(stmt.test, env, depth), self._eval(self.target[1], env, depth))
                    raise _Stop
                taken = self._eval(stmt.test, env, depth)
                if taken is _OPAQUE:
                    if self._contains_target(stmt):
                        raise _Stop
                    continue
                skipped = stmt.orelse if taken else stmt.body
                if (
                    not self.strict
                    and isinstance(self.target[0], ast.expr)
                    and any(self._contains_target(s) for s in skipped)
                    and self._bound(self.target[1], env)
                    and not {
                        n.id
                        for s in skipped
                        for n in ast.walk(s)
                        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
                    }
                    & {n.id for n in ast.walk(self.target[1]) if isinstance(n, ast.Name)}
                ):  # a group assigned on the way to the test is not the one bound here
                    # review72c C1: the target test sits in the branch this rank does not take (an `elif` after
                    # a test this rank passed, an inner `if` under one it failed): the rank never reaches the
                    # test, so it does not take its branch either (an elif's condition is its test AND NOT the
                    # earlier ones)
                    self.found = (False, self._eval(self.target[1], env, depth))
                    raise _Stop
                self._exec(stmt.body if taken else stmt.orelse, env, depth)
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
                value = self._eval(stmt.value, env, depth)
                for target in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
                    self._bind(target, value, env)
            elif isinstance(stmt, ast.AugAssign):
                value = self._binop(stmt.op, self._eval(stmt.target, env, depth), self._eval(stmt.value, env, depth))
                self._bind(stmt.target, value, env)
            elif isinstance(stmt, ast.For):
                items = self._eval(stmt.iter, env, depth)
                if not isinstance(items, (list, tuple, range)):
                    if self._contains_target(stmt):
                        raise _Stop
                    continue
                for item in items:
                    self._bind(stmt.target, item, env)
                    self._exec(stmt.body, env, depth)
            elif isinstance(stmt, ast.Expr):
                self._eval(stmt.value, env, depth)
            elif isinstance(stmt, ast.Return):
                raise _Return(self._eval(stmt.value, env, depth) if stmt.value is not None else None)
            elif isinstance(stmt, (ast.With, ast.Try)):
                self._exec(stmt.body, env, depth)
            elif isinstance(stmt, ast.Global):
                env.setdefault(_GLOBALS, set()).update(stmt.names)
            elif isinstance(stmt, (ast.Raise, ast.While)) or self._contains_target(stmt):
                raise _Stop
        return None

    def _bound(self, node: ast.expr, env: dict[str, Any]) -> bool:
        """Whether ``node`` is built on a name the interpreter holds (evaluating an unbound name would make
        it a free integer to sample)."""
        while isinstance(node, (ast.Subscript, ast.Attribute, ast.Call)):
            node = node.func if isinstance(node, ast.Call) else node.value
        return isinstance(node, ast.Name) and (node.id in env or node.id in self.globals)

    def _contains_target(self, stmt: ast.stmt) -> bool:
        return any(n is self.target[0] for n in ast.walk(stmt))

    def _bind(self, target: ast.expr, value: Any, env: dict[str, Any]) -> None:
        if isinstance(target, ast.Name) and target.id in env.get(_GLOBALS, ()):
            self.globals[target.id] = value
        elif isinstance(target, ast.Name):
            env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, (list, tuple)) and len(value) == len(target.elts):
                for t, v in zip(target.elts, value):
                    self._bind(t, v, env)
            else:
                for t in target.elts:
                    self._bind(t, _OPAQUE, env)

    # -- expressions

    def _eval(self, node: ast.expr, env: dict[str, Any], depth: int) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in env and node.id not in env.get(_GLOBALS, ()):
                return env[node.id]
            if node.id in self.globals:
                return self.globals[node.id]
            value = self.an.values.get(None, {}).get(node.id)
            if value is not None and depth < 4:
                return self._eval(value, {}, depth + 1)
            return self._free(node.id)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            items = [self._eval(e, env, depth) for e in node.elts]
            return tuple(items) if isinstance(node, ast.Tuple) else items
        if isinstance(node, ast.BinOp):
            return self._binop(node.op, self._eval(node.left, env, depth), self._eval(node.right, env, depth))
        if isinstance(node, ast.UnaryOp):
            value = self._eval(node.operand, env, depth)
            if value is _OPAQUE:
                return _OPAQUE
            if isinstance(node.op, ast.Not):
                return not value
            return -value if isinstance(node.op, ast.USub) and isinstance(value, int) else _OPAQUE
        if isinstance(node, ast.BoolOp):
            values = [self._eval(v, env, depth) for v in node.values]
            if any(v is _OPAQUE for v in values):
                return _OPAQUE
            return all(values) if isinstance(node.op, ast.And) else any(values)
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left, right = self._eval(node.left, env, depth), self._eval(node.comparators[0], env, depth)
            if left is _OPAQUE or right is _OPAQUE:
                return _OPAQUE
            op = type(node.ops[0])
            try:
                if op in (ast.In, ast.NotIn):
                    inside = left in (right.members if isinstance(right, _Group) else right)
                    return inside if op is ast.In else not inside
                return _COMPARE[op](left, (right,)) if op in _COMPARE else _OPAQUE
            except TypeError:
                return _OPAQUE
        if isinstance(node, ast.IfExp):
            test = self._eval(node.test, env, depth)
            if test is _OPAQUE:
                return _OPAQUE
            return self._eval(node.body if test else node.orelse, env, depth)
        if isinstance(node, ast.ListComp):
            return self._comprehension(node, env, depth)
        if isinstance(node, ast.Dict):  # a table of groups (``{"dp": ..., "train": new_group(...)}``: round 30)
            table: dict[Any, Any] = {}
            for k, v in zip(node.keys, node.values):
                key = self._eval(k, env, depth) if k is not None else _OPAQUE  # ``**other``: unknown keys
                if key is _OPAQUE or not isinstance(key, (str, int, bool)):
                    return _OPAQUE
                table[key] = self._eval(v, env, depth)
            return table
        if isinstance(node, ast.Subscript):
            seq, key = self._eval(node.value, env, depth), self._eval(node.slice, env, depth)
            try:
                return _OPAQUE if seq is _OPAQUE or key is _OPAQUE else seq[key]
            except (TypeError, IndexError, KeyError):
                return _OPAQUE
        if isinstance(node, ast.Slice):
            parts = [self._eval(p, env, depth) if p is not None else None for p in (node.lower, node.upper, node.step)]
            return _OPAQUE if _OPAQUE in parts else slice(*parts)
        if isinstance(node, ast.Call):
            return self._call(node, env, depth)
        if _env_rank(node):
            return self.rank
        return _OPAQUE

    def _binop(self, op: ast.operator, left: Any, right: Any) -> Any:
        if not (type(left) is int and type(right) is int):
            if isinstance(op, ast.Add) and isinstance(left, list) and isinstance(right, list):
                return left + right
            return _OPAQUE
        try:
            return {
                ast.Add: lambda: left + right,
                ast.Sub: lambda: left - right,
                ast.Mult: lambda: left * right,
                ast.FloorDiv: lambda: left // right,
                ast.Mod: lambda: left % right,
            }.get(type(op), lambda: _OPAQUE)()
        except ZeroDivisionError:
            return _OPAQUE

    def _comprehension(self, node: ast.ListComp, env: dict[str, Any], depth: int) -> Any:
        out: list[Any] = []

        def walk(i: int, scope: dict[str, Any]) -> bool:
            if i == len(node.generators):
                out.append(self._eval(node.elt, scope, depth))
                return True
            gen = node.generators[i]
            items = self._eval(gen.iter, scope, depth)
            if not isinstance(items, (list, tuple, range)) or len(out) > 10000:
                return False
            for item in items:
                inner = dict(scope)
                self._bind(gen.target, item, inner)
                conds = [self._eval(c, inner, depth) for c in gen.ifs]
                if _OPAQUE in conds:
                    return False
                if all(conds) and not walk(i + 1, inner):
                    return False
            return True

        return out if walk(0, dict(env)) else _OPAQUE

    def _call(self, node: ast.Call, env: dict[str, Any], depth: int) -> Any:
        args = [self._eval(a, env, depth) for a in node.args]
        kwargs = {k.arg: self._eval(k.value, env, depth) for k in node.keywords if k.arg}
        name = _terminal(node.func)
        if isinstance(node.func, ast.Attribute) and self._bound(node.func.value, env):
            receiver = self._eval(node.func.value, env, depth)
            if isinstance(receiver, _Mesh):
                return receiver.call(name, args, kwargs)
        full = self.an._resolve(node.func, self.func.unit)
        if full.startswith("torch.distributed.") or (isinstance(node.func, ast.Attribute) and name in _GROUP_CALLS):
            return self._dist(name, args, kwargs)
        if isinstance(node.func, ast.Name) and name in _BUILTINS and not any(a is _OPAQUE for a in args):
            try:
                return _BUILTINS[name](*args)
            except (TypeError, ValueError):
                return _OPAQUE
        if isinstance(node.func, ast.Attribute) and name == "append":
            target = self._eval(node.func.value, env, depth)
            if isinstance(target, list) and args:
                target.append(args[0])
            return None
        if isinstance(node.func, ast.Attribute) and name in ("index", "count") and len(args) == 1:
            target = self._eval(node.func.value, env, depth)  # Megatron's `_PIPELINE_RANKS.index(rank)`
            if isinstance(target, (list, tuple, range)) and args[0] is not _OPAQUE:
                try:
                    return getattr(target, name)(args[0])
                except ValueError:
                    raise _Impossible from None  # not a member here: this world cannot run the code
            return _OPAQUE
        callee = self.an._callee(node.func, None, self.func.unit) if isinstance(node.func, ast.Name) else None
        if callee is not None and depth < 3:
            func = self.an.table[callee]
            params = [a.arg for a in func.node.args.args]
            inner = {p: self._free(p) for p in params}
            inner.update(zip(params, args))
            inner.update({k: v for k, v in kwargs.items() if k in params})
            try:
                self._exec(func.node.body, inner, depth + 1)
            except _Return as done:
                return done.value
            return None
        return _OPAQUE

    def _dist(self, name: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        everyone = _Group(frozenset(range(self.world)))
        group = kwargs.get("group", args[0] if args else None)
        if name == "get_rank":
            if group is None:
                return self.rank
            return (
                sorted(group.members).index(self.rank)
                if isinstance(group, _Group) and self.rank in group.members
                else _OPAQUE
            )
        if name == "get_world_size":
            return self.world if group is None else len(group.members) if isinstance(group, _Group) else _OPAQUE
        if name == "init_device_mesh":
            shape = kwargs.get("mesh_shape", args[1] if len(args) > 1 else None)
            names = kwargs.get("mesh_dim_names")
            if not isinstance(shape, (list, tuple)) or not all(type(n) is int and n > 0 for n in shape):
                return _OPAQUE
            if math.prod(shape) != self.world:
                raise _Impossible  # init_device_mesh raises: this world is not one the code runs in
            if not (isinstance(names, (list, tuple)) and len(names) == len(shape)):
                names = None
            return _Mesh(tuple(range(self.world)), tuple(shape), tuple(names) if names else None, self.rank)
        if name == "new_group":
            ranks = kwargs.get("ranks", args[0] if args else None)
            if ranks is None:
                return everyone
            return _Group(frozenset(ranks)) if isinstance(ranks, (list, tuple, range)) else _OPAQUE
        if name == "new_subgroups":
            size = kwargs.get("group_size", args[0] if args else None)
            if type(size) is not int or size <= 0 or self.world % size:
                return _OPAQUE
            groups = [_Group(frozenset(range(i, i + size))) for i in range(0, self.world, size)]
            return groups[self.rank // size], groups
        if name == "new_subgroups_by_enumeration":
            lists = kwargs.get("ranks_per_subgroup_list", args[0] if args else None)
            if not isinstance(lists, (list, tuple)) or not all(isinstance(r, (list, tuple, range)) for r in lists):
                return _OPAQUE
            groups = [_Group(frozenset(r)) for r in lists]
            return next((g for g in groups if self.rank in g.members), None), groups
        return _OPAQUE


#: The key of :func:`_top_levels`' functions (a space: no function of a file has it).
_TOP = " module"


def _top_levels(an: _Analysis) -> list[_Func]:
    """Each reported unit's top level as a function without parameters (key :data:`_TOP`), for the checks that
    look at one function's body at a time (review79l M1: a script's top-level mkdir and recv were not looked at)."""
    return [  # not a notebook's cells: one cell's send can pair with another cell's recv
        _Func(_TOP, _module_function(u.tree), u, None, None)
        for u in an.units
        if u.report and u.prefix is None and u.cell is None
    ]


def _starts_group(body: list[ast.stmt]) -> bool:
    """Whether ``body``'s own code (not a function it defines) calls init_process_group: each rank runs it."""
    return any(isinstance(n, ast.Call) and _terminal(n.func) == "init_process_group" for n in _own_nodes(body))


def _module_function(tree: ast.Module) -> ast.FunctionDef:
    """The top level of a module as the body of a function without parameters (for :class:`_Ranks`, which runs
    a function's body: a script's ``g = new_group([0, 1])`` ... ``if rank < 2: all_reduce(t, group=g)``)."""
    args = ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
    return ast.FunctionDef(name=" module", args=args, body=tree.body, decorator_list=[], returns=None, type_params=[])


class _Return(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


class _Impossible(Exception):
    """The code cannot run in this sample world (a device mesh whose fixed shape does not fill it)."""


#: Where the interpreter's environment of a function keeps the names it declares ``global``.
_GLOBALS = " global"


@dataclass(frozen=True)
class _Mesh:
    """A ``DeviceMesh`` as ``init_device_mesh`` lays it out (the world's ranks in row-major order over
    ``shape``), seen from ``rank``: ``mesh["dp"]`` is the 1-D mesh of the ranks that share the rank's other
    coordinates; ``get_group``, ``get_local_rank``, ``size``, ``get_rank`` and ``get_coordinate`` as torch's
    torch/distributed/device_mesh.py defines them."""

    ranks: tuple[int, ...]
    shape: tuple[int, ...]
    names: tuple[str, ...] | None
    rank: int

    def _coordinate(self, rank: int) -> tuple[int, ...]:
        index, out = self.ranks.index(rank), []
        for size in reversed(self.shape):
            index, rest = divmod(index, size)
            out.append(rest)
        return tuple(reversed(out))

    def _dim(self, key: Any) -> int:
        if type(key) is int and 0 <= key < len(self.shape):
            return key
        if isinstance(key, str) and self.names and key in self.names:
            return self.names.index(key)
        raise KeyError(key)

    def __getitem__(self, key: Any) -> _Mesh:
        dims = [self._dim(k) for k in (key if isinstance(key, tuple) else (key,))]
        if self.rank not in self.ranks or any(type(k) is int for k in (key if isinstance(key, tuple) else (key,))):
            raise KeyError(key)  # a DeviceMesh is sliced by dimension names only
        mine = self._coordinate(self.rank)
        others = [d for d in range(len(self.shape)) if d not in dims]
        members = tuple(r for r in self.ranks if all(self._coordinate(r)[d] == mine[d] for d in others))
        names = tuple(self.names[d] for d in dims) if self.names else None
        return _Mesh(members, tuple(self.shape[d] for d in dims), names, self.rank)

    def call(self, name: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        dim = kwargs.get("mesh_dim", args[0] if args else None)
        if _OPAQUE in args or self.rank not in self.ranks:
            return _OPAQUE
        try:
            if name == "get_rank":
                return self.rank
            if name == "get_coordinate":
                return list(self._coordinate(self.rank))
            if name == "size":
                return len(self.ranks) if dim is None else self.shape[self._dim(dim)]
            if dim is None and len(self.shape) != 1:
                return _OPAQUE
            axis = self[self.names[self._dim(dim)]] if dim is not None and self.names else self
            if dim is not None and not self.names:
                return _OPAQUE
            if name == "get_group":
                return _Group(frozenset(axis.ranks))
            if name == "get_local_rank":
                return axis.ranks.index(self.rank)
        except (KeyError, IndexError):
            return _OPAQUE
        return _OPAQUE


_GROUP_CALLS = _GROUP_MAKING | {"get_rank", "get_world_size"}
_BUILTINS: dict[str, Callable[..., Any]] = {
    "range": range,
    "divmod": divmod,
    "list": list,
    "tuple": tuple,
    "len": len,
    "int": int,
    "min": min,
    "max": max,
    "sorted": sorted,
    "sum": sum,
    "abs": abs,
}


if __name__ == "__main__":
    raise SystemExit(main())
