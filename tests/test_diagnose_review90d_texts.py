"""Three texts review90d found misleading: a subgroup collective some members skipped, its waiting members'
end and the subgroup's own timeout unsaid (M1); a script's rank that exited "before returning from the function"
(M2); two all_reduce calls swapped on some ranks, the second told as the harmless kind of pairing (M3)."""

from __future__ import annotations

import pytest

from barrierlab.script import run_script


@pytest.mark.timeout(120)
def test_a_script_rank_that_exits_is_said_to_exit_before_the_script_ended(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "import sys\n"
        "import torch\n"
        "import torch.distributed as dist\n"
        "dist.init_process_group('gloo')\n"
        "if dist.get_rank() == 1:\n"
        "    sys.exit(3)\n"
        "dist.all_reduce(torch.ones(1))\n"
    )
    run = run_script(script, 3, timeout=2, deadline=15)
    line = run[1].summary()
    assert line == "rank 1: exited with code 3 before the script ended", line
    assert "the function" not in str(run) + str(run.diagnosis), (run, run.diagnosis)
