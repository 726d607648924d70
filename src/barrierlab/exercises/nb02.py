"""Checks for notebook 02 (barriers around checkpointing).

The exercise: ``save_atomically(obj, path)`` must never leave a partial file at ``path``, whenever the process
dies. The check runs it on rank 0 of a 4-rank group in the pattern of the notebook (rank 0 saves, barrier,
every rank loads) while the operating system kills rank 0 after a random share of the bytes it writes
(``RLIMIT_FSIZE``, whose signal ``SIGXFSZ`` ends the process by default), and decides from what is on disk and
what each rank loaded; and, on the run without a kill, from the file operations the recorder saw on rank 0:
``path`` must never be opened for writing (``torch.save(obj, path)``, a write from a buffer, a
``shutil.copyfile`` of a complete temporary file into place: a kill mid-copy leaves half a file), and it must
appear by a rename (``os.replace``, ``os.rename``, ``shutil.move``) of a file in the same directory that was
fully written (its size when renamed is its final size: flushed) by then. A sleep, a barrier or any other
collective inside ``save`` (called by rank 0 alone), or not saving at all are rejected. What it cannot see:
``fsync`` (only a power cut would show it).
"""

from __future__ import annotations

import io
import os
import random
import resource
import shutil
import signal
import tempfile

import torch
import torch.distributed as dist

import barrierlab as bl
from barrierlab.exercises import accesses, check_arguments
from barrierlab.exercises.nb00 import TIMEOUT, Verdict, verdict

WORLD = 4


def checked_save(directory: str, save, kill_at: float | None = None) -> int:
    """Rank 0 saves step 2 with ``save``, killed after ``kill_at`` of its bytes; then a barrier; every rank loads."""
    path = os.path.join(directory, "checkpoint.pt")
    state = {"step": 2, "model": torch.nn.Linear(64, 64).state_dict()}
    if dist.get_rank() == 0:
        if kill_at is not None:
            buffer = io.BytesIO()
            torch.save(state, buffer)
            size = len(buffer.getvalue())
            resource.setrlimit(resource.RLIMIT_FSIZE, (int(size * kill_at), resource.RLIM_INFINITY))
            signal.signal(signal.SIGXFSZ, signal.SIG_DFL)  # writing past the limit now kills this process
        save(state, path)
    dist.barrier()
    return torch.load(path, weights_only=True)["step"]


def check_save_atomically(save, *, quiet: bool = False, seed: int | None = None) -> Verdict:
    """Three kills with an old step-1 checkpoint in place (at random shares of the bytes), one without, one
    run without a kill; see the module's docstring."""
    check_arguments(save=save, seed=seed, quiet=quiet)
    rng = random.Random(seed)
    shares = sorted(round(rng.uniform(0.05, 0.95), 2) for _ in range(3))
    workdir = tempfile.mkdtemp(prefix="barrierlab-save-")
    try:
        for kill_at, old in [*((share, True) for share in shares), (round(rng.uniform(0.2, 0.8), 2), False)]:
            folder = tempfile.mkdtemp(dir=workdir)
            path = os.path.join(folder, "checkpoint.pt")
            if old:
                torch.save({"step": 1}, path)
            run = bl.run(checked_save, WORLD, args=(folder, save, kill_at), timeout=TIMEOUT)
            if run[0].status != "killed by signal":
                partial = _partial(path) if old else None
                if partial is not None:  # a short write that returned instead of failing (attack18 a07)
                    return verdict(False, f"rank 0 was not killed at {kill_at:.0%} of its bytes (it {run[0].status}), "
                                   f"and checkpoint.pt is now partial ({partial}): save put an incomplete file in "
                                   "place. A write can return having written fewer bytes than it was given "
                                   "(os.write returns the count): loop until every byte is written, or use "
                                   "torch.save or f.write, which do, and rename only then", quiet)
                return verdict(False, f"rank 0 was not killed at {kill_at:.0%} of its bytes (it {run[0].status}"
                               + (f": {run[0].error_message[:120]}" if run[0].error_message else "")
                               + "): does save(obj, path) write the checkpoint, on rank 0 alone, without "
                               "collectives of its own?", quiet)
            if not old and os.path.exists(path):
                return verdict(False, f"killed at {kill_at:.0%} with no old checkpoint, yet checkpoint.pt "
                               f"exists ({os.path.getsize(path)} bytes)", quiet)
            if old:
                try:
                    step = torch.load(path, weights_only=True)["step"]
                except Exception as error:
                    if not os.path.exists(path):  # review66a M2: the old one deleted before the new one was whole
                        return verdict(False, f"killed at {kill_at:.0%} of the bytes, checkpoint.pt was gone: the "
                                       "old checkpoint was removed before the new one was complete", quiet)
                    return verdict(False, f"killed at {kill_at:.0%} of the bytes, checkpoint.pt was left partial "
                                   f"({os.path.getsize(path)} bytes; torch.load: {type(error).__name__})", quiet)
                if step != 1:
                    return verdict(False, f"after a kill at {kill_at:.0%}, checkpoint.pt holds step {step}, not the "
                                   "old step 1", quiet)
        folder = tempfile.mkdtemp(dir=workdir)
        torch.save({"step": 1}, os.path.join(folder, "checkpoint.pt"))  # an old one to replace, as in training
        run = bl.run(checked_save, WORLD, args=(folder, save), timeout=TIMEOUT)
        if run.values != [2] * WORLD:
            return verdict(False, "without a kill, not every rank loaded step 2 after the barrier: "
                           + run.diagnosis.headline, quiet)
        problem = _not_atomic(run, folder)
        if problem:
            return verdict(False, problem, quiet)
        return verdict(True, f"kills at {', '.join(f'{s:.0%}' for s in shares)} left the old checkpoint intact, a "
                       "kill with none left no file, without a kill every rank loaded step 2, and the record shows a complete "
                       "temporary file renamed onto checkpoint.pt (the check cannot see fsync: keep it for power cuts)",
                       quiet)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _partial(path: str) -> str | None:
    """What is wrong with the checkpoint at ``path`` when it cannot be loaded ("4818 bytes; torch.load:
    OSError"), or None when it loads (or is not there)."""
    if not os.path.exists(path):
        return None
    try:
        torch.load(path, weights_only=True)
    except Exception as error:  # noqa: BLE001 - any failure to load is what is reported
        return f"{os.path.getsize(path)} bytes; torch.load: {type(error).__name__}"
    return None


def _named(path: str) -> str:
    """``path`` with its folders' links resolved but not its own name: checkpoint.pt stays checkpoint.pt even
    when it is a link the save swapped into place (attack18 a06: resolved, it named the temporary file the link
    points to, and that file's write was taken as a write of checkpoint.pt in place)."""
    return os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))


def _not_atomic(run, folder: str) -> str | None:
    """What the recorded file operations of rank 0's save say is not atomic about it, or None."""
    path = _named(os.path.join(folder, "checkpoint.pt"))
    load = min((e.start for e in run[0].events if e.kind == "collective"), default=None)
    mine = [a for a in accesses(run, os.path.dirname(folder)) if a.rank == 0 and (load is None or a.event.start < load)]
    in_place = [a for a in mine if a.how in ("write", "append") and a.event.name != "rename"
                and a.event.value != "link" and _named(a.path) == path]
    if in_place:
        e = in_place[0].event
        how = f"{e.call}(..., path)" if e.call else "open(path) for writing"
        return (f"the kills happened to spare it, but save wrote checkpoint.pt in place ({how} at line {e.line}): "
                "a kill in the middle of that write (or of a copy into place) leaves a partial file. Write a "
                "temporary file in the same directory, then os.replace it onto the path")
    # by the rename's target: its source may be outside the folder (a temporary file in /tmp)
    # or a hard link made onto it (os.link, which makes the name whole at once: attack19 a11)
    renames = [a.event for a in mine if (a.event.name == "rename" and a.event.to and _named(a.event.to) == path)
               or (a.event.value == "link" and _named(a.path) == path)]
    if not renames:
        return ("checkpoint.pt exists, but the record shows no rename onto it: write a temporary file in the same "
                "directory, then os.replace(tmp, path)")
    e = renames[-1]
    gone = [a.event for a in mine if a.event.start < e.start and _named(a.path) == path
            and (a.how == "remove" or (a.how == "rename" and a.event.to and _named(a.event.to) != path))]
    if gone:
        g = gone[-1]
        did = "removed" if g.name == "remove" else "renamed away"
        onto = "linking" if e.value == "link" else "renaming"
        return (f"save {did} the old checkpoint.pt (line {g.line}) before {onto} the new one onto it (line {e.line}): "
                "a crash between the two leaves no checkpoint at all, and a rank loading then finds none. "
                "os.replace(tmp, path) replaces the old file in one step: drop the removal")
    if e.value == "link":  # a hard link is on the same file system; how much of its source was written by then is
        return None  # not recorded (the rename's size is), so not judged
    # in checkpoint.pt's folder or a folder made inside it (tempfile.mkdtemp(dir=...): attack13 a07): the same
    # file system unless something is mounted there
    folder, tmp_folder = os.path.dirname(path), os.path.dirname(os.path.realpath(e.path))
    if os.path.commonpath([folder, tmp_folder]) != folder:
        return (f"the temporary file {e.path} is not in checkpoint.pt's directory: os.replace from another file "
                "system fails with EXDEV (here it may share one; /tmp often does not), and shutil.move then copies, "
                "which is not atomic. Put it next to the checkpoint")
    final = os.path.getsize(path) if os.path.exists(path) else None
    if e.value is not None and final is not None and int(e.value) < final:
        return (f"os.replace at line {e.line} renamed a temporary file that held {e.value} of its {final} bytes: "
                "the rest was still in Python's buffer, so a kill right after the rename leaves a partial "
                "checkpoint. Close the file, or flush (and fsync) it, before renaming")
    return None
