"""lint's knowledge of Lightning, Accelerate and torchmetrics: what its findings say, on the corpus items that
model each rule on a public source (tests/lint_corpus, checked line by line by test_lint.py)."""

from __future__ import annotations

from pathlib import Path

from barrierlab.lint import HELP, PER_ELEMENT_METRICS, RANK_HOOKS, lint_file

CORPUS = Path(__file__).parent / "lint_corpus"


def only(name: str, line: int, collective: str = ""):
    [finding] = [f for f in lint_file(CORPUS / name) if f.line == line and collective in f.collective]
    return finding


def test_a_collective_in_prepare_data_says_which_ranks_lightning_runs_it_on() -> None:
    finding = only("bad_lightning_prepare_data_collectives.py", 26)
    assert "Lightning calls `prepare_data()` on local rank 0 of each node" in finding.why
    assert finding.fix.startswith("move `dist.barrier()` out of prepare_data")
    assert "setup()" in finding.fix


def test_a_metric_fed_in_an_uneven_loop_names_its_list_state_and_the_update_line() -> None:
    finding = only("bad_torchmetrics_list_states_uneven_updates.py", 34, "latencies")
    assert finding.kind == "rank-dependent-loop" and finding.condition == "mine"
    assert "`values` (dist_reduce_fx not 'cat', line 19)" in finding.why
    assert "the update at line 33" in finding.why
    assert "dist_reduce_fx='cat'" in finding.fix


def test_a_forward_that_syncs_on_step_suggests_syncing_once() -> None:
    finding = only("bad_torchmetrics_sync_on_step_shard_loop.py", 33)
    assert "dist_sync_on_step=True" in finding.why
    assert finding.fix.endswith(
        "or leave dist_sync_on_step off (the default): the metric then syncs once, in compute()"
    )


def test_library_tables_name_their_sources() -> None:
    assert {h.name for h in RANK_HOOKS} == {"prepare_data"}
    assert all("data_connector.py" in h.source for h in RANK_HOOKS)
    assert all(states.rstrip(")").endswith(".py") for states in PER_ELEMENT_METRICS.values())
    # torchmetrics v1.9.0: these two are not RetrievalMetric subclasses; their add_state calls are in this file
    for name in ("RetrievalPrecisionRecallCurve", "RetrievalRecallAtFixedPrecision"):
        assert PER_ELEMENT_METRICS[name].endswith("(retrieval/precision_recall_curve.py)")


def test_help_says_what_lint_cannot_see_of_libraries() -> None:
    text = " ".join(HELP.split())
    assert "prepare_data" in text and "dist_sync_on_step" in text
    assert "hooks other than prepare_data" in text
