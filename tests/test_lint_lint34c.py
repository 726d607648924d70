"""lint34c: the per-rank evaluator follows a tensor's whole shape, the process groups a file makes, and what an
all_gather_object gives back.

Each capability has small programs of its own: a buggy one lint must flag at the right line, and correct twins
that must stay quiet. One test runs the buggy programs with ``bl.run`` on the world size they state (a short group
timeout, a generous deadline) and checks what the findings say happens on gloo."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from barrierlab.lint import _broadcast, _nested_dims, lint_source

# --- whole shapes: a collective whose tensor has the same rows but another shape on some ranks

PAD_TO_LOCAL_MAX = """\
import torch
import torch.distributed as dist

WORLD_SIZE = 2
BATCHES = {0: [[1, 2, 3, 4], [5, 6]], 1: [[7, 8, 9], [1]]}


def pad(rows, width=None):
    width = max(len(r) for r in rows) if width is None else width
    return torch.tensor([r + [0] * (width - len(r)) for r in rows])


def worker():
    rank = dist.get_rank()
    tokens = pad(BATCHES[rank])
    weights = torch.ones(tokens.shape, requires_grad=True)
    loss = (tokens.float() * weights).sum()
    (grad,) = torch.autograd.grad(loss, weights)
    dist.all_reduce(grad)
    return tuple(grad.shape)


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
"""


def test_shape_padded_to_each_ranks_own_longest_row() -> None:
    """Modelled on round 40's buggy_bergson_pad_to_rank_local_max_len: each rank pads its rows to its own longest
    one, so the gradient of the per-token weights (torch.autograd.grad gives the inputs' shapes) is (2, 4) on rank
    0 and (2, 3) on rank 1; both have 2 rows, so only the whole shape shows it. Padding to a width every rank
    shares is quiet, and so are the same rows on every rank."""
    (found,) = lint_source(PAD_TO_LOCAL_MAX)
    assert (found.kind, found.line) == ("size-mismatch", 19)
    assert "shape (2, 4) on rank 0 and shape (2, 3) on rank 1" in found.why
    assert "Received data size doesn't match expected size" in found.why and "Connection closed by peer" in found.why
    assert lint_source(PAD_TO_LOCAL_MAX.replace("pad(BATCHES[rank])", "pad(BATCHES[rank], width=6)")) == []
    assert lint_source(PAD_TO_LOCAL_MAX.replace("[[7, 8, 9], [1]]", "[[7, 8, 9, 1], [1]]")) == []
    assert lint_source(PAD_TO_LOCAL_MAX.replace("WORLD_SIZE = 2\n", "")) == []


GATHER_BY_SAMPLE_SIZE = """\
import torch
import torch.distributed as dist

WORLD_SIZE = 2
SAMPLES = [{"h": 64, "w": 64}, {"h": 96, "w": 64}]
CHANNELS = 4


def latents_for(sample):
    seq = (sample["h"] // 16) * (sample["w"] // 16)
    x = torch.randn(1, seq, CHANNELS)
    for _ in range(2):
        x = x - 0.1 * (x - x.mean(dim=1, keepdim=True))
    return x.contiguous()


def gather(t):
    out = [torch.empty_like(t) for _ in range(dist.get_world_size())]
    dist.all_gather(out, t)
    return torch.cat(out, dim=0)


def worker():
    rank = dist.get_rank()
    sample = dict(SAMPLES[rank])
    gather(latents_for(sample))
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
"""


def test_shape_of_a_gathered_tensor_follows_each_ranks_sample() -> None:
    """Modelled on round 49's buggy_qwenimage_validation_gather_shapes: the latent's sequence length comes from
    each rank's sample (64x64 gives 16, 96x64 gives 24), through broadcast arithmetic and a keepdim mean, so the
    all_gather's tensor is (1, 16, 4) on rank 0 and (1, 24, 4) on rank 1. Samples of one size are quiet, and so is
    a latent pooled to one row on every rank."""
    (found,) = lint_source(GATHER_BY_SAMPLE_SIZE)
    assert (found.kind, found.line) == ("size-mismatch", 19)
    assert "shape (1, 16, 4) on rank 0 and shape (1, 24, 4) on rank 1" in found.why
    assert "reached through lines 32, 26" in found.why
    assert lint_source(GATHER_BY_SAMPLE_SIZE.replace('{"h": 96, "w": 64}', '{"h": 64, "w": 64}')) == []
    pooled = GATHER_BY_SAMPLE_SIZE.replace("x.contiguous()", "x.mean(dim=1, keepdim=True).contiguous()")
    assert lint_source(pooled) == []  # (1, 1, 4) on every rank
    # flattened to (16, 4) and (24, 4): the rows differ, which the rows check (lintws33) already reports
    (rows,) = lint_source(GATHER_BY_SAMPLE_SIZE.replace("return x.contiguous()", "return x.view(-1, CHANNELS)"))
    assert (rows.kind, rows.line) == ("size-mismatch", 19) and "16 rows on rank 0" in rows.why


def test_shape_helpers_follow_torch() -> None:
    """The broadcast rule and torch.tensor's shape of nested lists, as torch gives them."""
    torch = pytest.importorskip("torch")
    for a, b in [((2, 1, 3), (4, 1)), ((5,), ()), ((1, 16, 4), (1, 1, 4)), ((3, 1), (1, 7))]:
        assert _broadcast(a, b) == tuple((torch.zeros(a) + torch.zeros(b)).shape)
    assert _broadcast((2, 3), (4, 3)) is None
    assert _nested_dims([[1, 2], [3, 4], [5, 6]]) == (3, 2) == tuple(torch.tensor([[1, 2], [3, 4], [5, 6]]).shape)
    assert _nested_dims([[1, 2], [3]]) is None  # torch.tensor raises on ragged rows
    assert _nested_dims([]) is None


# --- process groups: new_group's members, a collective on a group, a root that is not in it

GROUP_ROOT = """\
import torch
import torch.distributed as dist

WORLD_SIZE = 4
TP = 2


def bcast(obj, group, root=0):
    objects = [obj]
    dist.broadcast_object_list(objects, src=root, group=group)
    return objects[0]


def worker():
    rank, world = dist.get_rank(), dist.get_world_size()
    mine = None
    for start in range(0, world, TP):
        g = dist.new_group(list(range(start, start + TP)))
        if rank in range(start, start + TP):
            mine = g
    first = {"owner": rank} if dist.get_rank(mine) == 0 else None
    got = bcast(first, mine)
    dist.barrier()
    return got


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
"""


def test_group_root_given_as_a_group_rank_to_a_global_src() -> None:
    """Modelled on round 39's buggy_flashinfer_torchdist_bcast_root_as_global_src: broadcast_object_list's src is
    a global rank, but the helper hands it the group rank 0; global rank 0 is not in the group of ranks 2 and 3,
    where torch raises ValueError, so ranks 0 and 1 wait alone in the barrier. Reported at the barrier, the
    broadcast as its condition line. The twin that hands the group's first global rank is evaluated to the end
    and quiet; so is the same file with groups of all four ranks."""
    (found,) = lint_source(GROUP_ROOT)
    assert (found.kind, found.line, found.condition_line) == ("evaluated-count", 23, 10)
    assert "ranks 0, 1 make this call" in found.why
    assert "Global rank 0 is not part of group" in found.why and "global ranks 2, 3" in found.why
    fixed = GROUP_ROOT.replace("bcast(first, mine)", "bcast(first, mine, root=rank - rank % TP)")
    assert lint_source(fixed) == []
    assert lint_source(GROUP_ROOT.replace("TP = 2", "TP = 4")) == []


NON_MEMBER = """\
import torch
import torch.distributed as dist

WORLD_SIZE = 4


def worker():
    rank = dist.get_rank()
    pair = dist.new_group([0, 1])
    t = torch.ones(2)
    if dist.get_rank(pair) >= 0:
        dist.all_reduce(t, group=pair)
        dist.all_reduce(t, group=pair)
    stats = torch.tensor([dist.get_world_size(pair)])
    dist.all_gather([torch.zeros(1, dtype=torch.long) for _ in range(4)], stats)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
"""


def test_group_collectives_of_members_only() -> None:
    """get_rank(g) is -1 and get_world_size(g) -1 on a rank outside the group, as torch gives them; here the
    members make the same two calls on the pair and every rank the same default collectives: quiet. When the
    members make different calls on a group, the default group's comparison is not the whole story, and lint
    says nothing from the evaluation rather than explain the wrong wait (the structural checks may still speak);
    without the group call the same skew is reported by the evaluation."""
    assert lint_source(NON_MEMBER) == []
    # rank 0 waits in the pair's all_reduce while rank 1 is in a barrier: the default group's sequences alone
    # (one barrier on rank 0, two on the others) would name the wrong wait, so nothing is said
    skew = "    if rank == 0:\n        {}\n    else:\n        dist.barrier()\n    dist.barrier()\n"
    uneven = NON_MEMBER.replace("    dist.barrier()\n", skew.format("dist.all_reduce(t, group=pair)"))
    assert [f.kind for f in lint_source(uneven) if f.kind == "evaluated-count"] == []  # (other checks may speak)
    evaluated = [f for f in lint_source(NON_MEMBER.replace("    dist.barrier()\n", skew.format("pass")))]
    assert [f.kind for f in evaluated if f.kind == "evaluated-count"] == ["evaluated-count"]
    # a group made on some ranks only is not followed: the ranks' groups must agree
    partial = NON_MEMBER.replace("pair = dist.new_group([0, 1])", "pair = dist.new_group([0, 1]) if rank else None")
    assert [f.kind for f in lint_source(partial) if f.kind in ("evaluated-count", "size-mismatch")] == []


# --- all_gather_object's result: every rank gets the list of every rank's object, in rank order

AGREED_IN_ARRIVAL_ORDER = """\
import torch
import torch.distributed as dist

WORLD_SIZE = 2
SIZES = {"a": 5, "b": 3}


class Queue:
    def __init__(self):
        self.seen = []

    def agree(self):
        seen = [None] * dist.get_world_size()
        dist.all_gather_object(seen, sorted(self.seen))
        agreed = sorted(set.intersection(*(set(s) for s in seen)))
        return [t for t in self.seen if t in agreed]


def worker():
    rank = dist.get_rank()
    queue = Queue()
    queue.seen.extend(["a", "b"] if rank == 0 else ["b", "a"])
    for task in queue.agree():
        hidden = torch.ones(SIZES[task], 4)
        dist.all_reduce(hidden)
    dist.barrier()


if __name__ == "__main__":
    dist.init_process_group("gloo")
    worker()
    dist.destroy_process_group()
"""


def test_gathered_objects_agreed_but_kept_in_each_ranks_order() -> None:
    """Modelled on round 45's buggy_exo_tasks_queued_in_arrival_order: the ranks all_gather the tasks they have
    seen and keep those every rank has, but in their own arrival order, so rank 0 reduces task a's (5, 4) tensor
    while rank 1 reduces task b's (3, 4). The evaluator hands each rank the gathered list (a second pass, as for
    an all_reduce's agreed numbers) and runs the set intersection. Returning the agreed, sorted list is quiet;
    the evaluator does not guess the order of a loop over a set itself (the hash's), which the set-order check
    reports."""
    (found,) = lint_source(AGREED_IN_ARRIVAL_ORDER)
    assert (found.kind, found.line) == ("size-mismatch", 25)
    assert "5 rows on rank 0 and 3 rows on rank 1" in found.why and "2nd collective" in found.why
    assert (
        lint_source(AGREED_IN_ARRIVAL_ORDER.replace("return [t for t in self.seen if t in agreed]", "return agreed"))
        == []
    )
    unordered = AGREED_IN_ARRIVAL_ORDER.replace("for task in queue.agree():", "for task in set(queue.agree()):")
    # (the set-order check speaks there: string hashes differ between processes; the evaluation stays out)
    assert [f.kind for f in lint_source(unordered) if f.kind in ("size-mismatch", "evaluated-count")] == []
    # nothing agreed (rank 1 saw only "b", rank 0 only "a"): no all_reduce anywhere, quiet
    assert (
        lint_source(
            AGREED_IN_ARRIVAL_ORDER.replace('["a", "b"] if rank == 0 else ["b", "a"]', '["a"] if rank == 0 else ["b"]')
        )
        == []
    )
    # the gathered list is the same on every rank: a test of it takes the same branch everywhere
    skewed = AGREED_IN_ARRIVAL_ORDER.replace(
        "        return [t for t in self.seen if t in agreed]",
        "        if len(seen[1]) > 1:\n            dist.barrier()\n        return agreed",
    )
    assert lint_source(skewed) == []
    uneven = skewed.replace('["a", "b"] if rank == 0 else ["b", "a"]', '["a", "b"] if rank == 0 else ["b"]')
    assert lint_source(uneven) == []  # seen[1] == ["b"] on every rank: no barrier anywhere


# --- run time: what the findings say happens, on gloo


def _load(source: str, tmp_path: Path, name: str):
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


@pytest.mark.timeout(240)
def test_run_time_shapes_and_group_root(tmp_path: Path) -> None:
    """The two buggy programs run as the findings say: the all_reduce of (2, 4) against (2, 3) ends with gloo's
    'Received data size doesn't match expected size' on a rank, or with one rank returning while the other
    fails on the closed connection (both seen here); the broadcast's global src 0 raises ValueError on
    ranks 2 and 3, and ranks 0 and 1 fail in the barrier when those processes end."""
    bl = pytest.importorskip("barrierlab")
    padded = _load(PAD_TO_LOCAL_MAX, tmp_path, "lint34c_pad_to_local_max")
    run = bl.run(padded.worker, 2, timeout=10, deadline=120)
    assert not run.ok
    text = str(run)  # which rank reads first decides which of the finding's outcomes happens
    assert "Received data size doesn't match expected size" in text or "Connection closed by peer" in text, text
    fixed = _load(PAD_TO_LOCAL_MAX.replace("pad(BATCHES[rank])", "pad(BATCHES[rank], width=6)"), tmp_path, "lint34c_f")
    run = bl.run(fixed.worker, 2, timeout=10, deadline=120)
    assert run.ok, str(run)
    assert run.values == [(2, 6), (2, 6)]
    grouped = _load(GROUP_ROOT, tmp_path, "lint34c_group_root")
    run = bl.run(grouped.worker, 4, timeout=10, deadline=180)
    assert not run.ok
    text = str(run)
    assert text.count("Global rank 0 is not part of group") >= 2, text
    assert "rank 0: raised" in text and "rank 1: raised" in text, text
