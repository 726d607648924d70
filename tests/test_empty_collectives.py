"""Notebook 00 §2's rule, with its assumption (review27a): on gloo a blocking all_reduce or all_gather lets no rank
leave before the last one arrives only when the tensor has elements; one of zero elements sends nothing, so every
rank returns at once and nothing is ordered."""

from __future__ import annotations

import pytest

import barrierlab as bl

pytestmark = pytest.mark.usefixtures("no_leftovers")


def late_rank_3(op: str, elements: int) -> float:
    import time

    import torch
    import torch.distributed as dist

    if dist.get_rank() == 3:
        time.sleep(0.8)
    t = torch.zeros(elements)
    start = time.monotonic()
    if op == "all_reduce":
        dist.all_reduce(t)
    else:
        dist.all_gather([torch.zeros(elements) for _ in range(4)], t)
    return time.monotonic() - start


@pytest.mark.parametrize("op", ["all_reduce", "all_gather"])
def test_an_empty_tensor_orders_nothing_a_one_element_one_waits_for_the_last_rank(op):
    empty = bl.run(late_rank_3, 4, args=(op, 0), timeout=10)
    one = bl.run(late_rank_3, 4, args=(op, 1), timeout=10)
    assert empty.ok and one.ok, (empty, one)
    assert max(empty.values) < 0.4, empty.values  # nobody waited for rank 3
    assert min(one.values[:3]) > 0.4, one.values  # ranks 0-2 waited for it
