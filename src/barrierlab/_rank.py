"""What runs inside one rank process: set up, init the gloo group, call the learner's function, report.

Everything a rank reports goes to its files in the run's private directory (``_protocol.RankFiles``),
so that nothing is lost when the rank is killed; its :class:`~barrierlab._protocol.Outcome` is written
last, atomically. The set-up phases are functions whose names ``stacks.py`` knows from the contract
(``_protocol.RANK_PHASES``), so a rank stopped in one of them is described in words.
"""

from __future__ import annotations

import builtins
import contextlib
import errno
import faulthandler
import functools
import importlib.abc
import importlib.util
import inspect
import os
import re
import signal
import sys
import threading
import time
from datetime import timedelta

import cloudpickle
import torch
import torch.distributed as dist

from barrierlab import _protocol, _segments, record
from barrierlab._contain import RUN_MARKER, enter_cgroup, mark_process
from barrierlab._protocol import (
    OUTCOME_UNWRITTEN,
    OUTCOME_UNWRITTEN_TEXT,
    STACK_SIGNAL,
    Outcome,
    RankFiles,
    RankSpec,
    RunSpec,
    Status,
    clock_anchor,
    error_message,
    exit_status,
    exit_text,
    format_error,
    write_new_file,
)


@functools.cache
def loopback_interface() -> str | None:
    """The loopback interface's name (looked up once: the warm process asks before it forks ranks)."""
    for _index, name in socket_interfaces():
        if name in ("lo", "lo0"):
            return name
    return None


def socket_interfaces() -> list[tuple[int, str]]:
    import socket

    try:
        return socket.if_nameindex()
    except OSError:
        return []


def _redirect(fd: int, path: str) -> None:
    target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(target, fd)
    os.close(target)


def _watch_parents(pids: list[int]) -> None:
    """Exit at once when the kernel or the warm process is gone (no orphans holding ports)."""
    fds = []
    for pid in pids:
        try:
            fds.append(os.pidfd_open(pid))
        except ProcessLookupError:
            os._exit(75)
        except (AttributeError, OSError):
            fds = []
            break
    if fds:
        _protocol.readable(fds, None)
        os._exit(75)
    while True:  # no pidfd (macOS, old kernels): poll
        time.sleep(0.2)
        for pid in pids:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                os._exit(75)


def type_name(kind: type, short: bool = False) -> str:
    """``module.Qualname`` of a class, as text whatever its ``__module__``/``__qualname__`` hold (attack14 a10: a
    class whose ``__module__`` could not be formatted cost the rank its whole report)."""
    parts = (kind.__qualname__,) if short else (kind.__module__, kind.__qualname__)
    return ".".join(part if type(part) is str else "<unknown>" for part in parts)


def _pickled(value: object) -> tuple[bytes | None, str]:
    """(pickle of value, "") or (None, why it cannot be pickled)."""
    try:
        return cloudpickle.dumps(value), ""
    except BaseException as error:  # noqa: BLE001 - a __reduce__ may raise anything, KeyboardInterrupt included
        return None, f"{type_name(type(value))} ({type_name(type(error), short=True)}: {error_message(error)})"


def _save_flight_record(path: str) -> None:
    """Save torch's own flight recorder (the collectives this rank issued, including those made from C++,
    such as DDP's) for the diagnosis. A private API: any failure just means there is no record."""
    try:
        from torch._C._distributed_c10d import _dump_fr_trace_json

        data = _dump_fr_trace_json(includeCollectives=True)
        with open(path, "wb") as f:
            f.write(data if isinstance(data, bytes) else data.encode())
    except Exception:
        pass


class LearnersModules(importlib.abc.MetaPathFinder):
    """Import the learner's own modules from the files the kernel loaded them from, and only those.

    The call is pickled by reference to them, so each rank imports them fresh, as a torchrun worker would:
    their module-level code runs in the rank, with its RANK, and a module the kernel loaded from a file path
    (``importlib.util.spec_from_file_location``) is found although no ``sys.path`` entry holds it."""

    def __init__(self, modules: tuple[tuple[str, str, bool], ...]) -> None:
        self.files = {name: (path, package) for name, path, package in modules}

    def find_spec(self, name, path=None, target=None):
        found = self.files.get(name)
        if found is None or not os.path.isfile(found[0]):
            return None  # gone since: the usual import system says what is missing
        file, package = found
        locations = [os.path.dirname(file)] if package else None
        return importlib.util.spec_from_file_location(name, file, submodule_search_locations=locations)

    @staticmethod
    def install(modules: tuple[tuple[str, str, bool], ...]) -> None:
        for name, _path, _package in modules:
            sys.modules.pop(name, None)  # fresh, even if the warm process had imported it
        sys.meta_path.insert(0, LearnersModules(modules))


def load_the_call(spec: RunSpec):
    """Unpickle (fn, args, kwargs): this imports the modules the learner's code needs, fresh. A large call was
    written once to a file, which each rank reads for itself (so each has its own objects)."""
    LearnersModules.install(spec.modules)
    if spec.payload_path:
        with open(spec.payload_path, "rb") as f:
            return cloudpickle.load(f)
    return cloudpickle.loads(spec.payload)


def join_the_group(spec: RankSpec):
    """Join the launcher's group. Every rank first waits, through the store, for all to arrive: ranks start
    unevenly on a busy machine (one still importing the learner's modules seconds after the others), and
    gloo gives a connecting rank only the group's timeout, which a lesson sets to 1–2 s. What the learner
    chose bounds the learner's collectives, not our start-up; the run's deadline bounds that."""
    options = spec.run.options
    store = _launchers_store(spec)
    wait_for_every_rank(store, options.world_size, options.deadline, step="arrived")
    dist.init_process_group(
        "gloo",
        store=store,
        rank=spec.rank,
        world_size=spec.run.options.world_size,
        timeout=timedelta(seconds=spec.run.options.timeout),
    )
    return store


def _launchers_store(spec: RankSpec):
    """A client of the store the kernel hosts for this run on 127.0.0.1, as torchrun's workers join the
    agent's (a wait on it is woken by the server; the FileStore ranks used before was polled every 10 ms, which
    cost each rendezvous step up to that). A pooled rank connected to it while it waited (:func:`connect_ahead`):
    that connection, once."""
    global _store_ahead, _store_client
    deadline = timedelta(seconds=spec.run.options.deadline)
    if _store_client is not None and _store_client[0] == spec.run.store_port:
        return _store_client[1]  # this run's, connected before (the rank's start, then its init_process_group)
    ahead, _store_ahead = _store_ahead, None
    if ahead is not None and ahead[0] == spec.run.store_port:
        ahead[1].set_timeout(deadline)
        client = ahead[1]
    else:
        client = dist.TCPStore("127.0.0.1", spec.run.store_port, None, False, deadline, wait_for_workers=False)
    _store_client = (spec.run.store_port, client)
    return client


#: (port, client) of this run's store once a rank connected to it.
_store_client: tuple[int, object] | None = None


#: (port, client) of the store a pooled rank connected to while it waited: the next run's, made ahead by the kernel.
_store_ahead: tuple[int, object] | None = None


def connect_ahead(port: int) -> None:
    """In a rank forked ahead of time: connect to the next run's store (port 0: none known yet), so that the
    launch does not wait for the connection; the run's :func:`_launchers_store` takes it if its port matches."""
    global _store_ahead
    if not port:
        return
    try:
        client = dist.TCPStore("127.0.0.1", port, None, False, timedelta(seconds=60), wait_for_workers=False)
    except Exception:  # noqa: BLE001 - the kernel closed it meanwhile: the run connects to its own
        return
    _store_ahead = (port, client)


def wait_for_every_rank(store, world_size: int, timeout: float, step: str = "initialised") -> None:
    """Wait, through the store (not a collective, so it never pairs with the learner's), until every rank
    has reached ``step``; by default until every rank's init_process_group has returned: a rank that
    finishes fast and exits must not break a peer's connection set-up. ``timeout`` is the run's deadline:
    the launcher stops a run that takes longer, and a busy machine is not the learner's bug."""
    if store.add(f"barrierlab/{step}", 1) == world_size:
        store.set(f"barrierlab/{step}/go", "1")
    store.wait([f"barrierlab/{step}/go"], timedelta(seconds=timeout))


def call_the_function(fn, args, kwargs, keep: list | None = None):
    """Call the learner's function. With ``keep``, the function's frame is appended to it as the call
    starts (a profile hook that removes itself at the first call), so its locals (a DDP model, a process
    group) outlive the return: the rank reports what the function returned *before* they are destroyed,
    and a hang in torch's teardown (object destruction) after the function returned cannot hide it."""
    if keep is None:
        return fn(*args, **kwargs)
    caller = sys._getframe()

    def keep_the_frame(frame, event, _arg):
        if event == "call" and frame.f_back is caller:  # noqa: F821 (ruff misreads the closure)
            keep.append(frame)
            sys.setprofile(None)

    sys.setprofile(keep_the_frame)
    try:
        return fn(*args, **kwargs)
    finally:
        sys.setprofile(None)
        del keep_the_frame, caller


def init_process_group_on_the_launchers_store(
    spec: RankSpec, original, signature, args, kwargs, timeout_overrides: bool = False, script: bool = False
):
    """The learner's ``init_process_group`` call (``init=False``), re-pointed at the launcher's store.

    Whatever MASTER_ADDR, MASTER_PORT or ``tcp://`` address the learner's code set (the DDP tutorial
    hard-codes localhost:12355), the group joins the store the launcher hosts on 127.0.0.1 through
    ``env://``: nothing of the run listens beyond loopback and runs never collide on a port. A rank or world
    size that disagrees with the launcher's is a clear error, not a hang. The group's timeout is the run's
    when the call gives none; a ``timeout=`` the call gives (Lightning passes 30 minutes) wins, unless
    ``timeout_overrides`` (``barrierlab run --timeout``): then the run's replaces it, and rank 0 says so."""
    import torch.distributed.distributed_c10d as c10d

    rank, world_size = spec.rank, spec.run.options.world_size
    bound = signature.bind(*args, **kwargs)
    given = bound.arguments
    for name, ours in (("rank", rank), ("world_size", world_size)):
        theirs = given.get(name, -1)
        if theirs not in (-1, None) and theirs != ours and script:  # attack25 a08: no bl.run advice for a script
            fix = f"run it with -n {theirs}" if name == "world_size" else "let it take the rank torchrun gives"
            raise ValueError(
                f"init_process_group({name}={theirs!r}) in a script that `barrierlab run` started as rank {rank} "
                f"of {world_size}: {fix}, or read the rank and world size from the environment (RANK, "
                "WORLD_SIZE), which barrierlab run sets as torchrun does"
            )
        if theirs not in (-1, None) and theirs != ours:
            raise ValueError(
                f"init_process_group({name}={theirs!r}) on a rank that barrierlab started as rank {rank} of "
                f"{world_size}: with init=False, barrierlab.run calls your function as mp.spawn does, "
                f"fn(rank, *args); pass that rank and the world size you gave barrierlab.run"
            )
    if given.get("store") is None:
        os.environ.update(
            MASTER_ADDR="127.0.0.1", MASTER_PORT=str(spec.run.store_port), TORCHELASTIC_USE_AGENT_STORE="True"
        )
        given["init_method"] = "env://"
        wait_here = True
    else:
        wait_here = False
    given["rank"], given["world_size"] = rank, world_size
    _inits[0] += 1  # each init of a default group waits on keys of its own (attack19 a05: made again after destroy)
    ours, theirs = timedelta(seconds=spec.run.options.timeout), given.get("timeout")
    if theirs is None:
        given["timeout"] = ours
    elif timeout_overrides and theirs != ours:
        given["timeout"] = ours
        if rank == 0:
            asked = theirs.total_seconds() if isinstance(theirs, timedelta) else theirs
            print(
                f"[barrierlab] the script asked for {asked:g} s (init_process_group(timeout=...)); "
                f"--timeout {ours.total_seconds():g} overrides it",
                file=sys.stderr,
            )
    if wait_here:
        # as in join_the_group: all ranks arrive before any starts gloo's connection timer (ranks forked one
        # after the other must not time out on each other), but for no longer than the group's own timeout: a
        # rank whose code reaches init_process_group later than that fails the others' init, as under torchrun
        # (attack19 a14: it was waited for until the run's deadline, and the script passed)
        group = given["timeout"]
        seconds = group.total_seconds() if isinstance(group, timedelta) else spec.run.options.timeout
        try:
            wait_for_every_rank(
                _launchers_store(spec),
                world_size,
                min(spec.run.options.deadline, seconds),
                step=f"arrived/{_inits[0]}",
            )
        except (dist.DistStoreError, RuntimeError):  # torch's own init now waits, and times out, as it would
            pass
    result = original(*bound.args, **bound.kwargs)
    wait_for_every_rank(c10d._get_default_store(), world_size, spec.run.options.deadline, f"initialised/{_inits[0]}")
    return result


#: How many times this rank's learner called ``init_process_group`` (a default group destroyed and made again).
_inits = [0]

#: Every process group this rank created or destroyed (its own, the learner's, ``new_group``'s, ...), kept
#: until the rank ends with ``os._exit``: see :func:`keep_every_process_group`.
_groups_kept: list = []


def keep_gloo_on_loopback() -> None:
    """Point gloo back at the loopback interface just before it makes a group's sockets, whatever the learner's
    code set (``os.environ["GLOO_SOCKET_IFNAME"] = "eth0"`` from a multi-machine script): barrierlab.run starts
    every rank on this machine, and nothing of a run listens beyond loopback. The rank's stderr says so."""
    loopback = loopback_interface()
    asked = os.environ.get("GLOO_SOCKET_IFNAME")
    if loopback is None or asked == loopback:
        return
    if asked is not None:
        print(
            f"[barrierlab] GLOO_SOCKET_IFNAME={asked!r} ignored: barrierlab.run starts every rank on this machine "
            f"and keeps their sockets on loopback ({loopback}); for ranks on several machines, use torchrun",
            file=sys.stderr,
        )
    os.environ["GLOO_SOCKET_IFNAME"] = loopback


def keep_every_process_group() -> None:
    """Hold a reference to every process group the rank creates, so that no group's destructor ever runs.

    ``destroy_process_group()`` only drops torch's own references; a DDP model still alive holds the last
    one, and when the model is freed (at the return of the learner's function) ``ProcessGroupGloo``'s
    destructor joins gloo's worker threads while holding the GIL, as a worker waits for the GIL to free a
    finished all_gather's tensor: a deadlock in torch (pytorch/pytorch #56297), not in the learner's code.
    Kept here, the groups outlive everything the learner's code frees, and the rank ends with ``os._exit``
    (:func:`end`), which runs no destructor. Patched before the learner's modules are imported."""
    import torch.distributed.distributed_c10d as c10d

    create = c10d._new_process_group_helper
    destroy = c10d.destroy_process_group

    def _new_process_group_helper(*args, **kwargs):
        keep_gloo_on_loopback()
        made = create(*args, **kwargs)
        _groups_kept.append(made)
        return made

    def destroy_process_group(*args, **kwargs):
        _groups_kept.extend(c10d._world.pg_map)  # whatever made them (split_group too): torch forgets them now
        return destroy(*args, **kwargs)

    destroy_process_group.__wrapped__ = destroy
    destroy_process_group.__doc__ = destroy.__doc__
    c10d._new_process_group_helper = _new_process_group_helper
    for module in (c10d, dist):
        if getattr(module, "destroy_process_group", None) is destroy:
            module.destroy_process_group = destroy_process_group


def keep_own_gloo_groups_on_loopback() -> None:
    """A group the learner's code makes by constructing ``ProcessGroupGloo`` itself (on a store of its own or a
    ``PrefixStore`` of the run's) reads ``GLOO_SOCKET_IFNAME`` too, or is handed a device made for an interface
    (``ProcessGroupGloo.create_device(interface="eth0")``): both are pointed back at loopback, as
    :func:`keep_gloo_on_loopback` does for torch's own groups (attack14 a08). Not under torchrun."""
    import torch.distributed as dist

    gloo = getattr(dist, "ProcessGroupGloo", None)
    loopback = loopback_interface()
    if gloo is None or loopback is None:
        return
    init, create_device, create_default = gloo.__init__, gloo.create_device, gloo.create_default_device

    def __init__(self, *args, **kwargs):
        keep_gloo_on_loopback()
        return init(self, *args, **kwargs)

    def device(*args, **kwargs):
        named = {**dict(zip(("hostname", "interface"), args)), **kwargs}
        if named.get("hostname") or named.get("interface") not in (None, "", loopback):
            print(
                f"[barrierlab] ProcessGroupGloo.create_device({', '.join(f'{k}={v!r}' for k, v in named.items())}) "
                f"made on loopback ({loopback}) instead: barrierlab.run starts every rank on this machine; for "
                "ranks on several machines, use torchrun",
                file=sys.stderr,
            )
            named.pop("hostname", None)
            named["interface"] = loopback
        return create_device(**named)

    def default_device(*args, **kwargs):
        keep_gloo_on_loopback()
        return create_default(*args, **kwargs)

    gloo.__init__ = __init__
    gloo.create_device = staticmethod(device)
    gloo.create_default_device = staticmethod(default_device)


#: The limits :func:`room_to_report` raises back once the learner's code has ended: the soft limit on open files
#: always (attack15 a05: a rank holding many files open must still open its own), and these when the learner's code
#: lowered their soft limit below what it was as the rank started: file size (attack31 a02: the outcome could not be
#: written, exit code 74), address space and data (a function that lowered either to what it used, then returned
#: 40 MB, raised "MemoryError ... cannot be sent back"), stack (the rank's report may go deeper than the function
#: did), processes (threads count: the rank's exit work starts one). Not CPU time: a script that exceeds the limit it
#: set is ended by SIGXCPU under python and torchrun too.
LOWERED_LIMITS = ("RLIMIT_FSIZE", "RLIMIT_AS", "RLIMIT_DATA", "RLIMIT_STACK", "RLIMIT_NPROC")

#: Soft limits of :data:`LOWERED_LIMITS` as the rank started, before any of the learner's code ran.
_soft_limits_at_start: dict[int, int] = {}


def note_limits() -> None:
    """Note the soft limits of :data:`LOWERED_LIMITS` before any of the learner's code runs."""
    try:
        import resource
    except ImportError:
        return
    for name in LOWERED_LIMITS:
        which = getattr(resource, name, None)
        if which is not None:
            _soft_limits_at_start[which] = resource.getrlimit(which)[0]


def room_to_report() -> None:
    """Once the learner's code has ended, raise the soft open-file limit, and a soft limit of
    :data:`LOWERED_LIMITS` it lowered, back to the hard limit, so that the rank can open, grow and write its flight
    record and outcome files (attack15 a05: a script that lowered RLIMIT_NOFILE to its lowest free descriptor at
    its end, which torchrun passes, was "exited with code 74: ... Too many open files"; attack31 a02: one that set
    its soft RLIMIT_FSIZE to 0, the same). Nothing of the learner's runs after this but the exit work of
    :func:`release_the_function`, as an interpreter's exit would run it; a hard limit lowered too stays as it
    is."""
    try:
        import resource
    except ImportError:
        return
    infinity = resource.RLIM_INFINITY
    for which in (resource.RLIMIT_NOFILE, *_soft_limits_at_start):
        try:
            soft, hard = resource.getrlimit(which)
            if which != resource.RLIMIT_NOFILE:
                was = _soft_limits_at_start[which]
                if soft == infinity or (was != infinity and soft >= was):
                    continue  # not lowered by the learner's code: left as the rank started
            if soft != infinity and (hard == infinity or soft < hard):
                resource.setrlimit(which, (hard, hard))
        except (OSError, ValueError):
            pass


def flush_output() -> None:
    """Flush the rank's output streams, whatever the learner's code made of them: ``sys.stdout = None``, a
    closed ``sys.stderr`` or a writer without ``flush`` must not cost the rank its outcome (written next)."""
    for stream in dict.fromkeys((sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__)):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - None, closed, or a learner's object whose flush raises anything
            pass


def say(text: str) -> None:
    """Print ``text`` on the rank's stderr file (fd 2), whatever became of ``sys.stderr``."""
    try:
        os.write(2, (text + "\n").encode("utf-8", "replace"))
    except OSError:
        pass


def end(code: int) -> None:
    """End the rank now, once its outcome is written: flush its output, then ``os._exit``, so that no
    destructor runs (torch's teardown of a group can deadlock; see :func:`keep_every_process_group`)."""
    flush_output()
    os._exit(code)


#: Set to "1" in a run's ``env`` (``barrierlab run --timeout``): the run's timeout replaces one the script
#: passes to ``init_process_group``. Read, and removed from the environment, before the learner's code runs.
TIMEOUT_OVERRIDES = "BARRIERLAB_TIMEOUT_OVERRIDES"
#: Set to "1" in a run's ``env`` by the script runner (``barrierlab run train.py``): errors speak of the script and
#: its ``-n``, not of ``barrierlab.run``'s function. Read, and removed, like :data:`TIMEOUT_OVERRIDES`.
SCRIPT_RUN = "BARRIERLAB_SCRIPT_RUN"


def _leave_init_to_the_learner(spec: RankSpec) -> None:
    """``init=False``: the learner's code calls ``init_process_group`` itself; it gets
    :func:`init_process_group_on_the_launchers_store`. Patched before the learner's modules are imported,
    so ``from torch.distributed import init_process_group`` gets it too."""
    import torch.distributed.distributed_c10d as c10d

    original = c10d.init_process_group
    signature = inspect.signature(original)
    overrides = os.environ.pop(TIMEOUT_OVERRIDES, "") == "1"
    script = os.environ.pop(SCRIPT_RUN, "") == "1"

    def init_process_group(*args, **kwargs):
        read_import_time_environment(threads=True)  # what the script set before its `import torch`
        return init_process_group_on_the_launchers_store(spec, original, signature, args, kwargs, overrides, script)

    init_process_group.__wrapped__ = original
    init_process_group.__doc__ = original.__doc__
    for module in (c10d, dist):
        if getattr(module, "init_process_group", None) is original:
            module.init_process_group = init_process_group


def keep_own_stores_on_loopback() -> None:
    """Make ``dist.TCPStore`` (and ``distributed_c10d.TCPStore``) :func:`_loopback_tcp_store`'s, on every path
    (``init=True`` too: attack31 a04, a store rank 0 made for its own ``ProcessGroupGloo`` listened on ``::``).
    Patched before the learner's modules are imported, so ``from torch.distributed import TCPStore`` gets it too.
    The rank's own client of the launcher's store is a client: the subclass passes it to torch as it is."""
    import torch.distributed.distributed_c10d as c10d

    original = dist.TCPStore
    store = _loopback_tcp_store(original)
    for module in (c10d, dist):
        if getattr(module, "TCPStore", None) is original:
            module.TCPStore = store


def _loopback_tcp_store(tcp_store: type) -> type:
    """``dist.TCPStore`` for the learner's own stores (every rank): a master store listens on 127.0.0.1 only.
    torch's server binds every interface whatever ``host_name`` says (``LibUVStoreDaemon::init`` binds ``::`` or
    ``0.0.0.0``); given a socket already bound and listening (``master_listen_fd``), it serves that one. So the
    master's socket is bound here, on 127.0.0.1 and the port asked for (attack20 a16: tutorial code's
    ``TCPStore("0.0.0.0", PORT, ...)`` listened beyond the machine during the run). Clients, and a master given
    its own ``master_listen_fd``, are left as they are; a subclass, so ``isinstance`` checks still hold."""
    import socket

    names = ("host_name", "port", "world_size", "is_master", "timeout", "wait_for_workers", "multi_tenant")

    class TCPStore(tcp_store):
        __doc__ = tcp_store.__doc__

        def __init__(self, *args, **kwargs):
            given = dict(zip(names, args)) | kwargs
            port = given.get("port")
            if given.get("is_master") and given.get("master_listen_fd") is None and isinstance(port, int):
                listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                try:
                    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    listener.bind(("127.0.0.1", port))
                    listener.listen()
                except OSError:
                    listener.close()  # the port is taken, or another oddity: torch's own error says so
                else:
                    kwargs["master_listen_fd"] = listener.detach()  # the store's from now on
            super().__init__(*args, **kwargs)

    TCPStore.__name__ = TCPStore.__qualname__ = "TCPStore"
    TCPStore.__module__ = tcp_store.__module__
    return TCPStore


def run_module(rank: int, name: str, argv: tuple[str, ...]) -> None:
    """``barrierlab run -m pkg.train``'s function on each rank: run the module as ``python -m pkg.train ARGS``
    (and ``torchrun -m``) would: ``runpy.run_module`` as ``__main__`` of its package, the working folder first
    on ``sys.path``, ``sys.argv[0]`` the module's file (attack19 a10: a module with a relative import could
    not be run at all). Ends as :func:`run_script` does (:func:`_as_the_interpreter`)."""
    import importlib.util
    import runpy

    sys.path[:] = [os.getcwd(), *_without_launchers_entry()]
    spec = importlib.util.find_spec(name)
    origin = spec.origin if spec is not None and spec.origin else name
    if spec is not None and spec.submodule_search_locations is not None:  # a package: python -m runs __main__
        main = importlib.util.find_spec(f"{name}.__main__")
        origin = main.origin if main is not None and main.origin else origin
    sys.argv = [origin, *argv]
    sys.orig_argv = [sys.executable, "-u", "-m", name, *argv]  # as torchrun starts a worker (see run_script)
    _as_the_interpreter(lambda: runpy.run_module(name, run_name="__main__", alter_sys=True), origin)


def _without_launchers_entry() -> list[str]:
    """``sys.path`` without the working folder (``''`` or absolute) the launching process had prepended for
    itself, unless ``PYTHONPATH`` names it."""
    named = {os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p}
    here = os.getcwd()
    return [p for p in sys.path if p not in ("", here) or os.path.abspath(p or here) in named]


def _report_uncaught(error: BaseException, path: str) -> None:
    """What the interpreter does with an exception a script does not catch: ``sys.excepthook`` (by default, the
    traceback on stderr), with the traceback starting at the script's own frame, before the ``atexit`` handlers
    run (attack19 a01: no traceback was shown by ``barrierlab run``; a02: a script's own hook never ran)."""
    import types

    own = os.path.dirname(os.path.abspath(__file__)) + os.sep  # barrierlab's frames (its wrapper of open)
    frames, tb, started = [], error.__traceback__, False
    while tb is not None:
        started = started or tb.tb_frame.f_code.co_filename == path
        if started and not tb.tb_frame.f_code.co_filename.startswith(own):
            frames.append(tb)
        tb = tb.tb_next
    shown = None
    for tb in reversed(frames):
        shown = types.TracebackType(shown, tb.tb_frame, tb.tb_lasti, tb.tb_lineno)
    kept = error.__traceback__
    try:
        sys.excepthook(type(error), error.with_traceback(shown or kept), shown or kept)
    except BaseException:  # noqa: BLE001 - as the interpreter does, a failing hook is reported and passed over
        try:
            sys.__excepthook__(*sys.exc_info())
        except BaseException:  # noqa: BLE001, S110 - nothing more to say
            pass
    finally:
        error.__traceback__ = kept  # the rank's outcome reads the whole traceback


def run_script(rank: int, path: str, argv: tuple[str, ...], typed: str | None = None) -> None:
    """The script runner's function on each rank (``barrierlab run train.py``): run the script as
    ``python train.py ARGS`` would, as ``__main__`` with ``sys.argv`` and ``sys.path[0]`` set.

    A ``.py`` file is compiled and executed here, in a fresh ``__main__`` module (what ``runpy.run_path``
    does for it), so that no frame of runpy sits between the rank and the script's lines in the recorded
    callers and stacks; a folder or zip with a ``__main__.py`` goes through ``runpy.run_path``.
    ``sys.exit(0)`` (or ``sys.exit()``) from the script is a normal end. However the script ends (returns,
    exits, raises), what the interpreter does as ``python train.py`` exits follows: :func:`finish_like_exit`."""
    import runpy
    import types

    def body() -> None:
        if os.path.isfile(path) and path.endswith(".py"):
            with open(path, "rb") as f:
                code = compile(f.read(), path, "exec", dont_inherit=True)
            module = types.ModuleType("__main__")
            module.__file__ = path
            module.__builtins__ = builtins  # a module, as in python's __main__ (attack20 a19: a dict here)
            sys.modules["__main__"] = module
            exec(code, module.__dict__)
        else:
            runpy.run_path(path, run_name="__main__")

    sys.argv = [typed or path, *argv]  # as typed (attack19 a04); __main__.__file__ is absolute, as in python
    # the command line torchrun starts a worker with (`python -u train.py ARGS`), not barrierlab's own: a script
    # that re-executes itself with os.execv(sys.executable, sys.orig_argv) started a nested barrierlab run
    # (attack29 a14)
    sys.orig_argv = [sys.executable, "-u", typed or path, *argv]
    # sys.path as `python train.py` starts with it: the script's folder first, without the working folder the
    # launcher had prepended for itself (attack19 a03)
    sys.path[:] = [os.path.dirname(os.path.abspath(path)), *_without_launchers_entry()]
    _as_the_interpreter(body, path)


def _as_the_interpreter(body, path: str) -> None:
    """Run ``body`` (a script's or a module's ``__main__``, whose code is in file ``path``) as the interpreter
    runs a program: ``sys.exit(0)`` (or ``sys.exit()``) is a normal end; an exception it does not catch goes to
    ``sys.excepthook`` (:func:`_report_uncaught`); the program's own ``os._exit`` ends the rank with its outcome
    written; however it ends, what the interpreter does as it exits follows (:func:`finish_like_exit`)."""
    real_exit, me = os._exit, os.getpid()

    def _exit(code, /):  # the program's own os._exit ends the rank as it ends `python train.py`
        if os.getpid() == me and _script_exit is not None:
            try:
                _script_exit(code)
            except BaseException:  # noqa: BLE001, S110 - the exit goes on
                pass
        real_exit(code)

    os._exit = _exit
    try:
        body()
    except SystemExit as exit_:
        # the status python would exit with (attack13 a08: sys.exit(os.system("exit 1")) exits 0, its wait status
        # being 256; sys.exit(0.0) exits 1): only a failing one goes on to be the rank's outcome
        if exit_status(exit_.code):
            raise
    except BaseException as error:
        _report_uncaught(error, path)
        raise
    finally:
        try:  # an atexit handler's own os._exit(0) ends the rank as it ends python (attack20 a13)
            finish_like_exit()
        finally:
            os._exit = real_exit


def _from_the_function(tb):
    """A traceback from the learner's function on, without this launcher's two frames above it."""
    skip = 2
    while skip and tb is not None and tb.tb_next is not None:
        tb, skip = tb.tb_next, skip - 1
    return tb


#: Set by :func:`main` while the script runner's script runs: writes the rank's outcome when the script calls
#: ``os._exit(code)`` (attack15 a04: a script that ends with ``os._exit(0)`` to skip the interpreter's teardown
#: passes under torchrun, and its ranks were reported "did not finish": no outcome was written).
_script_exit = None


def _outcome_at_os_exit(outcome: Outcome, spec: RankSpec, key: bytes, code: object) -> None:
    """The outcome of a script that called ``os._exit(code)``: finished for 0, else exited with that status."""
    status = exit_status(code)
    outcome.status = Status.FINISHED if status == 0 else Status.EXITED
    outcome.exit_code = status or None
    if status == 0:
        outcome.value, outcome.send_error = _pickled(None)
    outcome.t_end = time.monotonic()
    outcome.clock = clock_anchor()
    room_to_report()
    try:
        record.stop()
        outcome.events_lost = record.lost_record
    except BaseException:  # noqa: BLE001, S110 - the outcome is written anyway
        pass
    if spec.run.options.record:
        _save_flight_record(spec.files.flight)
    flush_output()
    outcome.write(spec.files.outcome, key)


#: Exact types of the open file objects :func:`finish_like_exit` flushes (a learner's subclass could run code).
_FILE_TYPES = ("TextIOWrapper", "BufferedWriter", "BufferedRandom", "BufferedRWPair")


def _end_forked_child(outcome: Outcome, program: bool) -> None:
    """A process the learner's code forked that unwound out of the rank's function or script (attack20 a04:
    it wrote its own exit as the rank's outcome, and its parent saw it end with 0 after an uncaught
    exception): it ends as the interpreter ends a forked child, with the status its parent's ``waitpid``
    expects (a ``SystemExit``'s, 1 after an uncaught exception, whose traceback is printed, else 0), writing
    nothing of the rank's."""
    if outcome.status == Status.EXITED:
        code = outcome.exit_code or 0
    elif outcome.status in (Status.RAISED, Status.SETUP_FAILED):
        code = 1
        if not program and outcome.traceback:  # the script runner printed it already, as sys.excepthook would
            say(outcome.traceback.rstrip())
    else:
        code = 0
    flush_output()
    os._exit(code)


def finish_like_exit() -> None:
    """What a script's interpreter does as it exits, for ``barrierlab run train.py`` (the rank then ends with
    ``os._exit``, :func:`end`): run the ``atexit`` handlers (the script's, and those of the modules loaded, as
    ``python train.py`` would; an exception in one is printed and the next runs), collect garbage (an unreachable
    file object closes, flushing), and flush every file object still open, so that a log the script never
    closed reaches the disk, as it does under torchrun. No process group is destroyed: each is kept
    (:func:`keep_every_process_group`), so torch's teardown deadlock cannot happen here. It runs inside the
    rank's function, so a handler that hangs is stopped at the run's deadline and shown where it waits."""
    import atexit
    import gc

    # first what Py_FinalizeEx does first: threading's own exit calls (a ThreadPoolExecutor's workers finish
    # their queue), then every non-daemon thread joined (attack13 a01: work handed to threads was lost, while
    # python and torchrun wait for it); a thread that never ends holds the rank until the run's deadline, as it
    # would hold python
    with contextlib.suppress(Exception):
        threading._shutdown()  # noqa: SLF001 - the interpreter's own exit step
    atexit._run_exitfuncs()
    gc.collect()
    _flush_open_files()


def _flush_open_files(files: list | None = None) -> None:
    """Flush every file object the rank made that is still open (``files``: those :func:`_made_by_the_rank`
    found), then the standard streams."""
    for obj in _made_by_the_rank()[0] if files is None else files:
        try:
            if not obj.closed:
                obj.flush()
        except Exception:  # noqa: BLE001 - a file whose disk is full, a pipe with no reader: as at exit
            pass
    flush_output()


def _made_by_the_rank() -> tuple[list, list]:
    """The open file objects (exact :data:`_FILE_TYPES`) and the ``NamedTemporaryFile`` objects (exact type) the
    rank made, in one walk of the collector's generations: the warm process's objects are frozen (gc.freeze) and
    not walked."""
    import gc
    import io

    kinds = tuple(getattr(io, name) for name in _FILE_TYPES)
    temporary = getattr(sys.modules.get("tempfile"), "_TemporaryFileWrapper", None)
    files, temporaries = [], []
    for generation in range(3):
        for obj in gc.get_objects(generation):
            kind = type(obj)
            if kind in kinds:
                files.append(obj)
            elif kind is temporary:
                temporaries.append(obj)
    return files, temporaries


def release_the_function(code: int = 0, give_up: float | None = None) -> None:
    """What a worker's interpreter does as it exits, once the rank's outcome is written, as far as it is safe:

    - the ``weakref.finalize`` objects the rank made that are marked ``atexit`` run, newest first, as Python's
      exit runs them (``weakref.finalize._exitfunc``, an ``atexit`` handler): a ``tempfile.TemporaryDirectory``
      the function made and never cleaned up is removed (it stayed in /tmp, attack9 a6);
    - a ``NamedTemporaryFile`` (``delete=True``) the rank made and never closed is closed and removed, as its
      destructor would when a plain call's frame is freed, or at interpreter exit;
    - every file object the rank made that is still open is flushed, so a file written with
      ``json.dump(x, open(p, "w"))`` and never closed reaches the disk (it stayed empty while every rank reported
      success: attack9 a7);
    - multiprocessing's resource tracker unlinks what the rank left registered.

    The first two within :data:`EXIT_WORK_WAIT` seconds and :data:`DEADLINE_MARGIN` before ``give_up`` (the
    run's deadline, on this clock; none left: they do not run): a finalizer that hangs is cut short by a thread
    that ends the rank with ``code``, its outcome (written already) standing; one that holds the GIL in C for
    good is ended at the deadline, as a teardown hang. Not done: the function's frame (kept by
    :func:`call_the_function`) is not freed and nothing is collected (the collector is off while finalizers
    run, as at exit), so no destructor of the learner's runs and one that would hang cannot hold the rank; no
    ``atexit`` handler runs but the finalizers' (those a bl.run rank has are the warm process's, inherited; a
    script's run inside its function, :func:`finish_like_exit`); non-daemon threads are not waited for (they
    hold a ``python`` process for ever). The process groups are kept (:func:`keep_every_process_group`)."""
    files, temporaries = _made_by_the_rank()
    finalizers = _the_ranks_exit_finalizers()
    if finalizers or temporaries:
        now = time.monotonic()
        until = now + EXIT_WORK_WAIT if give_up is None else min(now + EXIT_WORK_WAIT, give_up - DEADLINE_MARGIN)
        if until > now:
            import gc

            done = threading.Event()
            threading.Thread(
                target=_end_at, args=(until, code, done), daemon=True, name="barrierlab-exit-bound"
            ).start()
            collecting = gc.isenabled()
            gc.disable()  # as Python's exit does while finalizers run: no collection runs a learner's __del__
            try:
                _run_exit_finalizers(finalizers, until)
                _remove_temporary_files(temporaries, until)
            finally:
                done.set()
                if collecting:
                    gc.enable()
    _flush_open_files(files)
    _segments.note_own_torch_files()  # tensors shared with torch's "file_system" strategy (attack14 a09)
    _let_the_resource_tracker_finish()


#: Most seconds a rank spends on what an interpreter's exit would run (:func:`release_the_function`).
EXIT_WORK_WAIT = 1.0
#: That work ends at least this long before the run's deadline.
DEADLINE_MARGIN = 0.25

#: The index the next ``weakref.finalize`` gets, taken as the rank starts (before any of the learner's code):
#: finalizers with a larger one are the rank's (the warm process's, inherited, are older). None: unknown.
_finalizers_from: int | None = None


def _mark_first_finalizer() -> None:
    global _finalizers_from
    import weakref

    try:
        _finalizers_from = next(weakref.finalize._index_iter)  # an itertools.count: one index is skipped
    except (AttributeError, TypeError):
        _finalizers_from = None


def _the_ranks_exit_finalizers() -> list:
    """The rank's live ``weakref.finalize`` objects marked ``atexit``, oldest first."""
    import weakref

    registry = getattr(weakref.finalize, "_registry", None)
    if _finalizers_from is None or not isinstance(registry, dict):
        return []
    try:
        if next(weakref.finalize._index_iter) == _finalizers_from + 1:
            return []  # none made since the mark: the registry (the warm process's, inherited) is not walked
    except (AttributeError, TypeError):
        return []
    try:
        found = [(info.index, f) for f, info in list(registry.items()) if info.atexit and info.index > _finalizers_from]
    except (AttributeError, TypeError):
        return []
    return [f for _index, f in sorted(found, key=lambda item: item[0])]


def _run_exit_finalizers(finalizers: list, until: float) -> None:
    """Call the finalizers newest first (a finalizer leaves the registry as it is called: each runs once); those
    made meanwhile run too. An exception is printed on the rank's stderr, as Python's exit prints it, and the
    next one runs."""
    import traceback

    while finalizers and time.monotonic() < until:
        finalizer = finalizers.pop()
        try:
            finalizer()
        except BaseException as error:  # noqa: BLE001 - as at exit: printed, then the next one
            say("Exception ignored in a finalizer at exit:\n" + "".join(traceback.format_exception(error)).rstrip())
        if not finalizers:
            finalizers = _the_ranks_exit_finalizers()


def _remove_temporary_files(temporaries: list, until: float) -> None:
    """Close, and so remove, the ``NamedTemporaryFile`` objects the rank left with ``delete=True``, as their
    destructor would (tempfile's own code: their type is exact)."""
    for temporary in temporaries:
        if time.monotonic() >= until:
            return
        closer = getattr(temporary, "_closer", None)
        try:
            if hasattr(closer, "cleanup"):  # Python 3.12+: what its __del__ calls (it honours delete=)
                closer.cleanup()
            elif getattr(temporary, "delete", False):
                temporary.close()  # 3.11: closing one made with delete=True removes it
        except Exception:  # noqa: BLE001, S110 - a full disk, a file removed already: as a destructor would
            pass


def _end_at(until: float, code: int, done: threading.Event) -> None:
    """In a thread: end the rank with ``code`` at ``until`` unless its exit work is ``done`` by then."""
    if done.wait(max(0.0, until - time.monotonic())):
        return
    say(
        "barrierlab: what this rank ran as it ended (finalizers, temporary files) was still going on after "
        f"{EXIT_WORK_WAIT:g} s or near the deadline; the rank ended without waiting for it"
    )
    os._exit(code)


#: Seconds a rank waits for multiprocessing's resource tracker to unlink what the rank left registered.
TRACKER_WAIT = 1.0


def _let_the_resource_tracker_finish() -> None:
    """If the rank started multiprocessing's resource tracker (a ``shared_memory`` segment, a named semaphore),
    close the rank's end of its pipe and wait for it to unlink what is still registered and exit, as it does when
    a ``python`` process exits. Ended by the run's clean-up instead, it left 64 MiB segments in /dev/shm after a
    run (attack9 a4)."""
    tracker_module = sys.modules.get("multiprocessing.resource_tracker")
    tracker = getattr(tracker_module, "_resource_tracker", None)
    pid, fd = getattr(tracker, "_pid", None), getattr(tracker, "_fd", None)
    if not isinstance(pid, int) or not isinstance(fd, int):
        return
    try:
        os.close(fd)  # end of file: the tracker unlinks what was never unregistered, then exits
        give_up = time.monotonic() + TRACKER_WAIT
        while os.waitpid(pid, os.WNOHANG)[0] == 0 and time.monotonic() < give_up:
            time.sleep(0.005)
    except OSError:  # not this rank's child (inherited from the warm process), already reaped
        pass


#: OMP_NUM_THREADS as the rank was set up (see :func:`read_import_time_environment`).
_threads_variable: str | None = None


def read_import_time_environment(threads: bool = False) -> None:
    """Apply the variables torch reads when it is imported, which the warm process imported before the rank's
    environment existed (attack29 a01-a04, a15: a script's or a notebook's TORCH_DISTRIBUTED_DEBUG=DETAIL,
    TORCH_COMPILE_DISABLE=1 and OMP_NUM_THREADS=2 were ignored, where torchrun's fresh workers and mp.spawn's
    children honour them). Called as the rank is set up (the kernel's environment and ``env=``) and again when the
    learner's code calls init_process_group (what a script set at its top, before its ``import torch``).
    ``threads``: also a change of OMP_NUM_THREADS since the rank was set up (a script's own), which then wins
    over ``threads=``."""
    if os.environ.get("TORCH_DISTRIBUTED_DEBUG"):
        dist.set_debug_level_from_env()
    dynamo_config = sys.modules.get("torch._dynamo.config")
    if dynamo_config is not None and "TORCH_COMPILE_DISABLE" in os.environ:
        dynamo_config.disable = os.environ["TORCH_COMPILE_DISABLE"] == "1"  # torch/_dynamo/config.py's own test
    wanted = os.environ.get("OMP_NUM_THREADS")
    if threads and wanted != _threads_variable and wanted is not None and wanted.strip().isdigit() and int(wanted):
        torch.set_num_threads(int(wanted))


def _set_environment(spec: RankSpec) -> None:
    options = spec.run.options
    os.chdir(spec.run.cwd)
    sys.path[:] = spec.run.sys_path
    kernels = dict(spec.run.kernel_env)  # the kernel's environment now, not the one the warm process started with
    for name in [name for name in os.environ if name not in kernels]:
        del os.environ[name]
    for name, value in kernels.items():  # only what differs: each change is a putenv
        if os.environ.get(name) != value:
            os.environ[name] = value
    os.environ.update(
        {
            "RANK": str(spec.rank),
            "WORLD_SIZE": str(options.world_size),
            "LOCAL_RANK": str(spec.rank),
            "LOCAL_WORLD_SIZE": str(options.world_size),
            "GROUP_RANK": "0",
            "GROUP_WORLD_SIZE": "1",
            "ROLE_RANK": str(spec.rank),
            "ROLE_NAME": "default",
            "ROLE_WORLD_SIZE": str(options.world_size),
            "TORCHELASTIC_RESTART_COUNT": "0",
            "TORCHELASTIC_MAX_RESTARTS": "0",
            # torchrun's rendezvous id: its presence is what dist.is_torchelastic_launched() checks (Lightning's
            # TorchElasticEnvironment.detected() calls it; attack10 a15)
            "TORCHELASTIC_RUN_ID": spec.run.run_id,
            "TORCH_NCCL_ASYNC_ERROR_HANDLING": os.environ.get("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"),
            RUN_MARKER: spec.run.run_id,
        }
    )  # the marker is inherited by every program the rank starts
    mark_process(spec.run.run_id)  # and its name by every process it forks without exec
    if spec.run.store_port:  # as torchrun sets them: the agent's store, which the ranks join as clients
        os.environ.update(
            {
                "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": str(spec.run.store_port),
                "TORCHELASTIC_USE_AGENT_STORE": "True",
            }
        )
    loopback = loopback_interface()
    if loopback:
        os.environ["GLOO_SOCKET_IFNAME"] = loopback
    # torchrun sets OMP_NUM_THREADS=1 for its workers when it is not set (attack14 a05: a script reading it)
    os.environ.setdefault("OMP_NUM_THREADS", str(options.threads))
    env = dict(options.env)
    os.environ.update(env)
    torch.set_num_threads(options.threads)
    global _threads_variable
    _threads_variable = os.environ.get("OMP_NUM_THREADS")
    read_import_time_environment()
    # A fresh interpreter (a torchrun worker) seeds torch's generator from the OS; a forked rank would share the
    # warm process's state with every other rank (attack14 a11: an unseeded draw that differs between torchrun's
    # ranks was the same on every rank here, hiding the mismatch it causes). Python's random reseeds at fork.
    torch.seed()
    # numpy's global generator too, when the warm process has imported numpy (torch does): a fresh interpreter
    # seeds it from the OS at import, a fork copies it (corpus round 36: MosaicML Streaming's unseeded shared-memory
    # prefix, mosaicml/streaming #145, differed between torchrun's ranks and hung; here every rank drew the same)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()


def _capture_output(files: RankFiles) -> None:
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    _redirect(1, files.stdout)
    _redirect(2, files.stderr)
    sys.stdout = sys.__stdout__  # the warm process pointed it at stderr to protect its message pipe
    sys.stdout.reconfigure(line_buffering=True)
    sys.stderr.reconfigure(line_buffering=True)


#: Where this rank lists the pages it copied from the warm process as it ends ("": it does not; see
#: :func:`list_written_pages`), set when its Become asks for it.
list_pages_to = ""
#: Of each entry of /proc/PID/pagemap, its last byte: bit 7 "present", bit 0 "mapped by this process only".
_OWN_PAGE = bytes(1 if b & 0x81 == 0x81 else 0 for b in range(256))


def list_written_pages(path: str) -> None:
    """Write to ``path`` the ranges of this process's private writable memory that it holds alone now (from
    /proc/self/pagemap): the pages it copied from the warm process since it was forked (each one a copy-on-write
    fault, the biggest share of a rank's CPU at the launch), and new ones. A rank that does the same run copies
    about the same pages, so the warm process has the ranks it pools copy these while they wait
    (:func:`copy_ahead`). One line per range, ``start length`` in hex. Never raises."""
    try:
        page = os.sysconf("SC_PAGE_SIZE")
        with open("/proc/self/maps") as f:
            lines = f.read().splitlines()
        found = []
        fd = os.open("/proc/self/pagemap", os.O_RDONLY)
        try:
            for line in lines:
                fields = line.split(maxsplit=5)
                if len(fields) < 5 or fields[1][:2] != "rw" or fields[1][3:4] != "p":
                    continue
                name = fields[5].strip() if len(fields) > 5 else ""
                if name.startswith("[") and name != "[heap]" and not name.startswith("[anon:"):
                    continue  # the stack, vvar and the like
                low, high = (int(x, 16) for x in fields[0].split("-"))
                entries = os.pread(fd, (high - low) // page * 8, low // page * 8)
                marks = entries[7::8].translate(_OWN_PAGE)
                for run in re.finditer(b"\x01+", marks):
                    found.append(f"{low + run.start() * page:x} {(run.end() - run.start()) * page:x}\n")
        finally:
            os.close(fd)
        write_new_file(path, "".join(found).encode())
    except (OSError, ValueError):
        pass


#: madvise(2) advice: fault the range in as if written (a private page is copied), Linux 5.14+.
MADV_POPULATE_WRITE = 23


def copy_ahead(ranges: list[tuple[int, int]]) -> None:
    """In a pooled rank: copy, now, the pages of the warm process's memory that a rank of the last runs wrote
    (:func:`list_written_pages`), so that the run it is handed does not take those copy-on-write faults. The
    contents do not change (``MADV_POPULATE_WRITE`` faults a page in as a write would, writing nothing); a range
    no longer mapped, or a kernel without the advice, is skipped."""
    if not ranges:
        return
    try:
        import ctypes

        from barrierlab._contain import libc

        madvise = libc().madvise
        madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    except (OSError, AttributeError):
        return
    for start, length in ranges:
        if madvise(start, length, MADV_POPULATE_WRITE) != 0 and ctypes.get_errno() == errno.EINVAL:
            return  # no such advice here


_prepared = False


def prepare(kernel_pid: int) -> None:
    """What a rank does before it knows its run: a rank the warm process forks ahead of time does it while it
    waits (off the launch's path: each thread started here waits until the new thread has run, milliseconds on a
    busy machine), a rank forked for a run first thing. Its descriptor table is grown while it has one thread,
    faulthandler writes to its fd 2, a thread ends it when the kernel or the warm process is gone, every process
    group it will create is kept (:func:`keep_every_process_group`), and the recorder's thread waits."""
    global _prepared
    if _prepared:
        return
    # what the rank needs after the learner's code ran (sealing the outcome, formatting its exception): imported
    # now, before a script's folder or the kernel's working directory heads sys.path, where a learner's own
    # hmac.py or traceback.py would otherwise be imported in their place and end the rank (attack8)
    import hashlib  # noqa: F401
    import hmac  # noqa: F401
    import stat  # noqa: F401
    import traceback  # noqa: F401

    record.reserve_high_fd()  # before any thread starts
    signal.signal(signal.SIGINT, signal.default_int_handler)
    faulthandler.enable(file=sys.stderr, all_threads=True)
    threading.Thread(
        target=_watch_parents, args=([kernel_pid, os.getppid()],), daemon=True, name="barrierlab-watchdog"
    ).start()
    keep_every_process_group()
    keep_own_gloo_groups_on_loopback()
    hide_machinery_threads()
    loopback_interface()
    _segments.install()  # done in the warm process already (its ranks inherit it): then a flag's test
    record.prepare_wrappers()
    record.start_watch()
    record.arm()  # after the threads above start: they run none of the learner's code
    _prepared = True


def hide_machinery_threads() -> None:
    """``threading.enumerate()`` and ``threading.active_count()`` in a rank leave out barrierlab's own daemon
    threads (named ``barrierlab-...``: the watchdog, the flight-record watch), which a process under torchrun does
    not have: a script that joins every thread but the main one waited for them until the deadline (attack13
    a02). The threads still run; only the listing the learner's code sees is what it would be under torchrun."""
    if getattr(threading.enumerate, "__barrierlab_original__", None) is not None:
        return
    original = threading.enumerate

    def enumerate_threads() -> list:
        return [t for t in original() if not str(t.name).startswith("barrierlab-")]

    def active_count() -> int:
        return len(enumerate_threads())

    enumerate_threads.__barrierlab_original__ = original
    enumerate_threads.__doc__ = original.__doc__
    active_count.__doc__ = threading.active_count.__doc__
    threading.enumerate = enumerate_threads
    threading.active_count = active_count


def _say_before_exec(outcome: Outcome, path: str, key: bytes) -> None:
    """Have the rank say which program it is replaced with (an outcome in ``path``, sealed with ``key``), just
    before it replaces itself (``os.execv`` and the like raise the audit event ``os.exec`` first, which the
    recorder's audit hook passes on, recording or not: no second hook on every audit event): the program,
    the same process, is still the rank and its exit status is the rank's outcome (``collect._replaced_outcome``),
    but it writes no outcome of its own, and the run said "did not finish … after 0 collective calls" (attack8
    a9). Not the outcome file itself: the kernel takes a rank whose outcome is written for one that has
    finished. An exec that fails leaves the rank running: its outcome at the end stands. A process the rank
    forked that execs is not the rank (its own PID): nothing is written for it."""
    me = os.getpid()

    def before_exec(args: tuple) -> None:
        if os.getpid() != me:
            return
        try:
            words = [os.fsdecode(a) for a in (args[1] if len(args) > 1 and args[1] is not None else [args[0]])]
            command = " ".join(words)
            replaced = Outcome(outcome.rank, outcome.world_size, Status.EXITED, pid=me, t_start=outcome.t_start)
            replaced.replaced_by = command if len(command) <= 300 else command[:297] + "..."
            replaced.clock = clock_anchor()
            flush_output()
            replaced.write(path, key)
        except BaseException:  # noqa: BLE001, S110 - an audit hook that raises would stop the exec
            pass

    record.before_exec = before_exec  # called by the recorder's audit hook, installed in every rank (prepare)


def main(spec: RankSpec, key: bytes = b"") -> int:
    """Run one rank; return its exit code. Everything it reports goes to its :class:`RankFiles`; its outcome
    is sealed with ``key``, which only this rank and the kernel know."""
    rank, options, files = spec.rank, spec.run.options, spec.files
    prepare(spec.run.kernel_pid)
    _capture_output(files)  # onto fds 1 and 2: faulthandler, enabled on fd 2, writes to the rank's stderr file
    stack_file = open(files.stack, "w")
    faulthandler.register(STACK_SIGNAL, file=stack_file, all_threads=True)

    outcome = Outcome(rank=rank, world_size=options.world_size, status=Status.SETUP_FAILED, pid=os.getpid())
    in_fn = False
    kept: list = []  # the function's frame, and its exception: never released (the rank ends with os._exit)
    try:
        _set_environment(spec)
        note_limits()  # before any of the learner's code (unpickling the call included)
        _segments.note_to(os.path.join(spec.run.run_dir, _segments.NOTES_FILE))  # unlinked after the run if left
        _mark_first_finalizer()  # the finalizers made from here on are the rank's: run as it ends
        _say_before_exec(outcome, files.replaced, key)
        if options.record:
            record.start(files.events, rank=rank, t0=spec.run.t0)
        else:
            record.disarm()
        keep_own_stores_on_loopback()  # init=True and init=False alike (attack31 a04)
        if not options.init:
            _leave_init_to_the_learner(spec)
        if spec.run.cgroup:  # in the run's cgroup before any of the learner's code runs (unpickling included)
            enter_cgroup(spec.run.cgroup)
        fn, args, kwargs = load_the_call(spec.run)
        if options.init:
            record.phase("joining")
            store = join_the_group(spec)
            wait_for_every_rank(store, options.world_size, options.deadline)
        else:
            args = (rank, *args)  # as mp.spawn calls it
            # every rank has loaded the call before any runs the learner's code: barrierlab's own start-up
            # (forking, unpickling the arguments) is not counted against the group's timeout when the learner's
            # init_process_group waits for its peers, only the learner's own code is (attack19 a14)
            wait_for_every_rank(_launchers_store(spec), options.world_size, options.deadline, step="started")
        outcome.t_start = time.monotonic()
        record.phase("called")
        in_fn = True
        if fn in (run_script, run_module):
            global _script_exit
            _script_exit = functools.partial(_outcome_at_os_exit, outcome, spec, key)
        value = call_the_function(fn, args, kwargs, kept)
        room_to_report()  # before its value is pickled (attack31 a02: a lowered RLIMIT_AS made that a MemoryError)
        outcome.status = Status.FINISHED
        outcome.value, outcome.send_error = _pickled(value)
        if outcome.value is None:
            outcome.status = Status.RAISED
            outcome.send_error = "its return value " + outcome.send_error
    except SystemExit as exit_:  # the status Python itself would exit with; a message is printed as it does
        outcome.status, outcome.exit_code = Status.EXITED, exit_status(exit_.code)
        if in_fn:  # where the learner's code called sys.exit() (corpus34's Megatron item named no line)
            outcome.traceback = format_error(exit_, _from_the_function(exit_.__traceback__))
        text = exit_text(exit_.code)
        if text is not None:
            flush_output()
            say(text)
    except BaseException as error:
        room_to_report()  # before the exception is pickled
        tb = _from_the_function(error.__traceback__) if in_fn else error.__traceback__
        outcome.status = Status.RAISED if in_fn else Status.SETUP_FAILED
        outcome.error_type = type_name(type(error))
        outcome.message = error_message(error)  # a learner's __str__ may raise: the rank reports anyway
        outcome.traceback = format_error(error, tb)
        outcome.exception, _ = _pickled(error)
        kept.append(error)
    if os.getpid() != outcome.pid:
        _end_forked_child(outcome, fn in (run_script, run_module))
    outcome.t_end = time.monotonic()
    outcome.clock = clock_anchor()
    room_to_report()
    try:
        record.stop()
        outcome.events_lost = record.lost_record
    except BaseException as error:  # noqa: B036 - the recorder's failure must not cost the rank its outcome
        say(f"barrierlab: the recorder failed while stopping: {type(error).__name__}: {error_message(error)}")
    if options.record:
        _save_flight_record(files.flight)
    flush_output()  # guarded: the learner's code may have replaced or closed the streams
    try:
        outcome.write(files.outcome, key)
    except BaseException as error:  # noqa: B036 - a full disk, an RLIMIT_FSIZE the function set: say so, then end
        say(
            f"{OUTCOME_UNWRITTEN_TEXT} (its function {'returned' if outcome.status == Status.FINISHED else 'raised'}): "
            f"{type(error).__name__}: {error_message(error)}"
        )
        end(OUTCOME_UNWRITTEN)
    if list_pages_to:
        list_written_pages(list_pages_to)
    if options.linger:
        while True:  # like a rank that goes on with other work: the launcher ends it
            time.sleep(3600)
    release_the_function(outcome.exit_code or 0, give_up=spec.run.t0 + options.deadline)
    end(outcome.exit_code or 0)  # every process group is kept: none is destroyed
    return outcome.exit_code or 0
