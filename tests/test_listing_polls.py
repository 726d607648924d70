"""A wait for a file through a folder listing (attack18 a01, a02): polling ``os.listdir`` or ``glob.glob`` until an
entry appears orders the reader after the file's publisher as polling ``os.path.exists`` does — a rename's
result, or a marker the reader does not open — and the polls themselves are part of the wait, not reads of the
folder racing what others put there. What a listing cannot order stays a race: a file written in place, found
and then read (its bytes may still be coming), and a single listing made while another rank fills the folder."""

from __future__ import annotations

import glob
import os
import sys
import time

import pytest
import torch.distributed as dist

import barrierlab as bl

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="records through the audit hook")


def publish_then_poll(folder, how, in_place):
    path = os.path.join(folder, "model.txt")
    # both ranks start together, so rank 1's first poll comes before the publish (its miss is what orders the
    # read; a rank 1 that started 0.3 s late, beside the full suite, found the file at once: a race). A barrier
    # before the write orders nothing about the write and the read.
    dist.barrier()
    if dist.get_rank() == 0:
        time.sleep(0.3)
        target = path if in_place else path + ".tmp"
        with open(target, "w") as f:
            f.write("weights")
        if not in_place:
            os.replace(target, path)
        return None
    while True:
        names = os.listdir(folder) if how == "listdir" else [os.path.basename(p) for p in glob.glob(path)]
        if "model.txt" in names:
            break
        time.sleep(0.01)
    with open(path) as f:
        return f.read()


@pytest.mark.parametrize("how", ["listdir", "glob"])
def test_a_listing_polled_until_a_renamed_file_appears_orders_the_read_after_the_rename(tmp_path, how):
    run = bl.run(publish_then_poll, 2, args=(str(tmp_path), how, False), live=False)
    assert run.ok and run.values[1] == "weights"
    assert run.races() == [], run.races()


def test_a_listing_polled_until_a_file_written_in_place_appears_still_races_its_read(tmp_path):
    run = bl.run(publish_then_poll, 2, args=(str(tmp_path), "listdir", True), live=False)
    assert run.ok
    reads = [r for r in run.races() if r.first.rank == 0 and r.second.rank == 1 and r.second.how == "read"]
    assert reads, run.races()  # the read of model.txt races its write (the polls race its creation too)


def list_once_while_filled(folder):
    if dist.get_rank() == 0:
        with open(os.path.join(folder, "shard0.txt"), "w") as f:
            f.write("0")
        return None
    time.sleep(0.3)
    return sorted(os.listdir(folder))  # one listing, no wait: what it finds is timing


def test_a_single_listing_of_a_folder_another_rank_fills_still_races(tmp_path):
    run = bl.run(list_once_while_filled, 2, args=(str(tmp_path),), live=False)
    assert run.ok and run.values[1] == ["shard0.txt"]
    assert {(r.first.rank, r.second.rank) for r in run.races()} == {(0, 1)}
