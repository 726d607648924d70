"""Notebook 08's check passes every correct fix of the capstone's two barrier bugs and rejects the wrong ones.

Every script is the shipped ``notebooks/capstone/train.py`` (or its ``solution.py``) with some of its lines
replaced, as a learner edits a copy; the check runs each as ``barrierlab run`` would and decides from the record.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from barrierlab.exercises import nb08
from barrierlab.lint import lint_file

CAPSTONE = Path(__file__).resolve().parent.parent / "notebooks" / "capstone"
TRAIN = (CAPSTONE / "train.py").read_text()

# The lines of train.py the fixes touch.
INNER_BARRIER = '    os.replace(path + ".tmp", path)\n    dist.barrier()\n'
NO_INNER_BARRIER = '    os.replace(path + ".tmp", path)\n'
SAVE = "        if rank == 0:\n            save_checkpoint(model.module, optimizer, epoch, checkpoint)\n"
RELOAD = "    # 4. Every rank reloads"
CHECKED = "    # 5. Rank 0 evaluates"
REMOVE = "        os.remove(checkpoint)\n"

BARRIER_BEFORE_RELOAD = {INNER_BARRIER: NO_INNER_BARRIER, RELOAD: "    dist.barrier()\n" + RELOAD}


def script(tmp_path: Path, replacements: dict[str, str], source: str = TRAIN) -> Path:
    """train.py with each key (which must occur exactly once) replaced, written as the learner's copy."""
    for old, new in replacements.items():
        assert source.count(old) == 1, f"train.py no longer contains exactly one {old!r}"
        source = source.replace(old, new)
    path = tmp_path / "my_train.py"
    path.write_text(source)
    return path


# --- correct fixes: four mechanisms --------------------------------------------------------------------------

CORRECT = {
    # the notebook's solution: barriers every rank reaches, after the last save and before the removal
    "solution: two barriers every rank reaches": None,
    # save_checkpoint() on every rank, writing only on rank 0 (its barrier now on every rank); a blocking
    # all_reduce of every rank's verdict before rank 0 removes the file (on gloo it orders like a barrier)
    "save on every rank, all_reduce of the verdicts": {
        SAVE: "        save_checkpoint(model.module, optimizer, epoch, checkpoint)\n",
        '    torch.save(state, path + ".tmp")\n    os.replace(path + ".tmp", path)\n': (
            '    if dist.get_rank() == 0:\n        torch.save(state, path + ".tmp")\n'
            '        os.replace(path + ".tmp", path)\n'
        ),
        CHECKED: "    verified = torch.ones(1)\n    dist.all_reduce(verified)\n" + CHECKED,
    },
    # the others' half of the barrier in an else branch; store keys: each rank signals its reload, rank 0 waits
    "else-branch barrier, store keys": {
        SAVE: SAVE + "        else:\n            dist.barrier()\n",
        CHECKED: (
            '    store = dist.FileStore(os.path.join(args.workdir, "keys"), dist.get_world_size())\n'
            '    store.set(f"reloaded-{rank}", "yes")\n'
            "    if rank == 0:\n"
            '        store.wait([f"reloaded-{r}" for r in range(dist.get_world_size())])\n' + CHECKED
        ),
    },
    # a barrier on every rank after each save; the verdicts gathered to rank 0 (gather's root waits for all)
    "barrier per epoch, gather to rank 0": {
        INNER_BARRIER: NO_INNER_BARRIER,
        SAVE: SAVE + "        dist.barrier()\n",
        CHECKED: (
            "    verdicts = [torch.zeros(1) for _ in range(dist.get_world_size())] if rank == 0 else None\n"
            "    dist.gather(torch.ones(1), verdicts, dst=0)\n" + CHECKED
        ),
    },
    # an async barrier, waited for before the removal
    "barrier before the reload, async barrier waited for": {
        **BARRIER_BEFORE_RELOAD,
        CHECKED: "    work = dist.barrier(async_op=True)\n    work.wait()\n" + CHECKED,
    },
    # a broadcast from rank 0 before the reload (on gloo every non-root leaves after the root entered: one to
    # many is what it orders); each rank's verdict sent to rank 0 before the removal (many to one)
    "broadcast before the reload, send/recv before the removal": {
        INNER_BARRIER: NO_INNER_BARRIER,
        RELOAD: "    dist.broadcast(torch.zeros(1), src=0)\n" + RELOAD,
        CHECKED: (
            "    if rank == 0:\n"
            "        for r in range(1, dist.get_world_size()):\n"
            "            dist.recv(torch.zeros(1), src=r)\n"
            "    else:\n"
            "        dist.send(torch.ones(1), dst=0)\n" + CHECKED
        ),
    },
    # the group's store: rank 0 sets a key after its last save, the others wait for it; a blocking all_reduce
    # of the verdicts before the removal
    "store key before the reload, all_reduce before the removal": {
        INNER_BARRIER: NO_INNER_BARRIER,
        RELOAD: (
            "    store = dist.distributed_c10d._get_default_store()\n"
            "    if rank == 0:\n"
            '        store.set("checkpoint saved", "yes")\n'
            '    store.wait(["checkpoint saved"])\n' + RELOAD
        ),
        CHECKED: "    dist.all_reduce(torch.ones(1))\n" + CHECKED,
    },
}


@pytest.mark.parametrize("name", list(CORRECT))
def test_a_correct_fix_passes(tmp_path, name):
    replacements = CORRECT[name]
    path = CAPSTONE / "solution.py" if replacements is None else script(tmp_path, replacements)
    verdict = nb08.check(str(path))
    assert verdict.ok, verdict.message


# --- wrong fixes ----------------------------------------------------------------------------------------------


def test_the_shipped_script_hangs_and_the_check_names_the_barrier_only_rank_0_made(tmp_path):
    verdict = nb08.check(str(script(tmp_path, {})))
    assert not verdict.ok
    line = TRAIN[: TRAIN.index(INNER_BARRIER)].count("\n") + 2
    assert "did not finish" in verdict.message
    assert f"rank 0 made #2 (barrier at my_train.py line {line}, in save_checkpoint)" in verdict.message, (
        verdict.message
    )
    assert "ranks 1–3 never made a #2" in verdict.message


def test_deleting_the_barrier_leaves_the_reload_and_the_removal_unordered(tmp_path):
    verdict = nb08.check(str(script(tmp_path, {INNER_BARRIER: NO_INNER_BARRIER})))
    # the job may survive or not: a rank that reloads the previous epoch's checkpoint fails step 4's check
    assert not verdict.ok and "nothing orders them on gloo" in verdict.message, verdict.message
    assert "`checkpoint.pt`" in verdict.message
    assert_the_race_named_is_the_failing_ranks(verdict.message)


def assert_the_race_named_is_the_failing_ranks(message: str) -> None:
    """When a rank failed while files raced, the race the check names is one of that rank's own accesses."""
    failed = re.match(r"the job did not finish: rank (\d+) ", message)
    if failed and "The record shows why: " in message:
        assert f"rank {failed[1]} " in message.split("The record shows why: ", 1)[1], message


def test_fixing_bug_1_alone_leaves_the_removal_unordered_after_the_reloads(tmp_path):
    """The solution's "Bug 2" paragraph: with only the barrier moved, the record's races name rank 0's removal of
    `checkpoint.pt` against the other ranks' reloads (review16b: the text was shown by no output)."""
    verdict = nb08.check(str(script(tmp_path, BARRIER_BEFORE_RELOAD)))
    assert not verdict.ok and "nothing orders them on gloo" in verdict.message, verdict.message
    # the race is told from either side: "rank 0 removed `checkpoint.pt` … after rank 1 read it", or (a reload
    # that came too late, seen in CI) "rank 1 tried to read `checkpoint.pt` (already removed) … after rank 0
    # removed it"
    assert "`checkpoint.pt`" in verdict.message and re.search(r"\bremov(ed|ing)\b", verdict.message), verdict.message
    assert_the_race_named_is_the_failing_ranks(verdict.message)


def test_a_sleep_before_the_removal_is_rejected(tmp_path):
    verdict = nb08.check(
        str(
            script(tmp_path, {**BARRIER_BEFORE_RELOAD, REMOVE: "        import time\n        time.sleep(1)\n" + REMOVE})
        )
    )
    assert not verdict.ok and "removed `checkpoint.pt`" in verdict.message, verdict.message
    assert "came from timing" in verdict.message


def test_a_barrier_only_rank_0_reaches_before_the_removal_hangs(tmp_path):
    verdict = nb08.check(str(script(tmp_path, {**BARRIER_BEFORE_RELOAD, REMOVE: "        dist.barrier()\n" + REMOVE})))
    assert not verdict.ok and "rank 0 made #3 (barrier at my_train.py" in verdict.message, verdict.message


def test_saving_on_every_rank_is_rejected(tmp_path):
    every_rank_saves = {SAVE: "        save_checkpoint(model.module, optimizer, epoch, checkpoint)\n"}
    verdict = nb08.check(str(script(tmp_path, every_rank_saves, (CAPSTONE / "solution.py").read_text())))
    assert not verdict.ok, verdict.message
    # ranks writing one temporary file may also make a rename fail: either way the check says what happened
    assert "wrote checkpoint.pt too" in verdict.message or "did not finish" in verdict.message, verdict.message


def test_dropping_the_removal_is_rejected(tmp_path):
    verdict = nb08.check(str(script(tmp_path, {**BARRIER_BEFORE_RELOAD, REMOVE: ""})))
    assert not verdict.ok and "was not removed" in verdict.message, verdict.message


def test_an_async_barrier_never_waited_for_orders_nothing(tmp_path):
    verdict = nb08.check(
        str(script(tmp_path, {**BARRIER_BEFORE_RELOAD, CHECKED: "    dist.barrier(async_op=True)\n" + CHECKED}))
    )
    # rejected either way: when the job finishes, for the unordered delete; when a rank ends with its barrier
    # still in flight and the others wait in it (how often depends on the machine's load), for the hang
    assert not verdict.ok, verdict.message
    assert "removed `checkpoint.pt`" in verdict.message or "did not finish" in verdict.message, verdict.message


def test_a_broadcast_before_the_removal_orders_the_wrong_way(tmp_path):
    # a dummy collective that orders the wrong pair: rank 0, the root, leaves its broadcast without waiting
    # for the others' reloads
    verdict = nb08.check(
        str(
            script(
                tmp_path, {**BARRIER_BEFORE_RELOAD, CHECKED: "    dist.broadcast(torch.zeros(1), src=0)\n" + CHECKED}
            )
        )
    )
    # the job may survive (the removal raced with a reload) or a rank's reload may find the file gone: either
    # way the message names the removal and the reload nothing ordered
    assert not verdict.ok and "removed" in verdict.message and "checkpoint.pt" in verdict.message, verdict.message
    assert "nothing orders them on gloo" in verdict.message, verdict.message
    assert_the_race_named_is_the_failing_ranks(verdict.message)


def test_polling_for_the_checkpoint_file_orders_nothing(tmp_path):
    # the others poll until the file is there: after epoch 0 it always is, and nothing orders the reload after
    # the last save (the job may or may not survive it)
    polled = {
        INNER_BARRIER: NO_INNER_BARRIER,
        RELOAD: "    while not os.path.exists(checkpoint):\n        pass\n" + RELOAD,
        CHECKED: "    dist.barrier()\n" + CHECKED,
    }
    verdict = nb08.check(str(script(tmp_path, polled)))
    assert not verdict.ok, verdict.message
    assert "nothing orders them on gloo" in verdict.message or "did not finish" in verdict.message, verdict.message


# --- lint agrees with the lesson -------------------------------------------------------------------------------


def test_lint_finds_exactly_the_planted_barrier_in_train_py_and_nothing_in_the_solution():
    finding, removal = lint_file(CAPSTONE / "train.py")
    assert (finding.collective, finding.kind) == ("save_checkpoint -> dist.barrier", "hidden-collective")
    assert TRAIN.splitlines()[finding.line - 1].strip() == SAVE.splitlines()[1].strip()
    # bug 2, the removal nothing orders after the other ranks' reload (review64b M5: lint sees it too)
    assert (removal.collective, removal.kind) == ("os.remove", "file-race")
    assert TRAIN.splitlines()[removal.line - 1].strip() == REMOVE.strip()
    assert lint_file(CAPSTONE / "solution.py") == []
