"""Synchronisation helpers a training script can use as they are: ``main_process_first()``.

``main_process_first`` is the rank-0-first pattern (rank 0 downloads or preprocesses, the other ranks
wait, then use what it made) with one thing the usual ``if rank != 0: barrier()`` / ``if rank == 0:
barrier()`` recipe lacks: when the main process fails, every rank learns it at once and raises an
error that names the failure, instead of waiting in a barrier until the timeout (or forever).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import torch.distributed as dist


@contextlib.contextmanager
def main_process_first(*, local: bool = False, group: dist.ProcessGroup | None = None) -> Iterator[bool]:
    """Run the ``with`` body on the main process first, then on every other rank; share failures.

    >>> with main_process_first():
    ...     dataset = load_or_download(root)   # rank 0 downloads; the others then read its files

    - The main process is rank 0 of ``group`` (default: the whole job); with ``local=True`` it is the
      process with ``LOCAL_RANK`` 0 on each machine (set by torchrun), for files on a node-local disk.
    - The other ranks wait at the ``with`` line, then run the body once every main process finished it.
    - If a main process raises in the body, it re-raises its own exception, and every other rank raises
      ``RuntimeError("rank 0 failed while preparing (ValueError: ...): see rank 0's traceback")`` at once.
    - Without an initialised process group (single-process use) the body simply runs.
    - The wait is one collective (``all_gather_object``) on every rank of ``group``: every rank of the
      group must enter the block, and the wait is bounded by the group's timeout, so give
      ``init_process_group`` a timeout longer than the preparation takes.

    The value bound by ``as`` is True on the main process(es), False on the other ranks of ``group``, and True
    on a rank outside ``group``: it waits for no one, so it runs the body itself, as without a process group.
    """
    if not isinstance(local, bool):
        raise TypeError(f"local must be True or False, not {local!r}")
    # new_group() hands a rank outside the group torch's NON_GROUP_MEMBER (-100), which it accepts as a group
    if group is not None and not isinstance(group, dist.ProcessGroup) and group != dist.GroupMember.NON_GROUP_MEMBER:
        raise TypeError(f"group must be a process group (dist.new_group(...)) or None, not {type(group).__name__}")
    if not (dist.is_available() and dist.is_initialized()):
        yield True
        return
    group_rank = dist.get_rank(group)
    if group_rank < 0:  # this rank is not a member of ``group``: nothing to coordinate
        yield True
        return
    main = _is_main(group_rank, local)
    rank = dist.get_rank()
    if not main:
        _wait_for_main(rank, None, group)
        yield False
        return
    try:
        yield True
    except BaseException as error:  # tell the others before re-raising, so nobody waits in vain
        _wait_for_main(rank, _describe(error), group)
        raise
    _wait_for_main(rank, "", group)


def _is_main(group_rank: int, local: bool) -> bool:
    if not local:
        return group_rank == 0
    value = os.environ.get("LOCAL_RANK")
    if value is None:
        raise ValueError(
            "main_process_first(local=True) needs the LOCAL_RANK environment variable (torchrun sets it): "
            "it tells which process is the first on its machine"
        )
    return int(value) == 0


def _describe(error: BaseException) -> str:
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _wait_for_main(rank: int, status: str | None, group: dist.ProcessGroup | None) -> None:
    """Exchange every rank's status: None (waited), "" (main, succeeded) or the main's error.

    Raises on every rank that is not a failed main itself if any main process failed.
    """
    statuses: list = [None] * dist.get_world_size(group)
    try:
        dist.all_gather_object(statuses, (rank, status), group=group)
    except RuntimeError as error:
        if status is not None:
            raise
        raise RuntimeError(
            f"rank {rank} was waiting for the main process to finish preparing, and the wait failed: {error}"
        ) from error
    failures = [(r, s) for r, s in statuses if s]
    if failures and not status:
        failed, what = failures[0]
        others = (
            f" (and {len(failures) - 1} more main process{'es' if len(failures) > 2 else ''})"
            if len(failures) > 1
            else ""
        )
        raise RuntimeError(f"rank {failed} failed while preparing ({what}){others}: see rank {failed}'s traceback")
    if not any(s is not None for _, s in statuses):
        raise RuntimeError(
            "main_process_first: no rank of the group was a main process "
            "(with local=True, the process with LOCAL_RANK 0 must be a member of the group)"
        )
