"""Promise (reference: `barrierlab lint` finds collectives only some ranks reach; knows Accelerate, DeepSpeed,
detectron2, mmengine...; exit 0 = nothing found). Ten more real training scripts, reduced faithfully (each file in
lint_real24/correct/ names its source and what was kept), linted as published: every finding is a false alarm.
Then one realistic barrier/collective bug planted in each copy (the shapes bug reports describe): each must be
found. Exits 1 on any false alarm or any planted bug missed; prints the counts."""

import re
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import PY, Verdict, env, run  # noqa: E402

HERE = Path(__file__).parent / "lint_real24" / "correct"

PLANTED = {  # file -> (what the bug is, old text, new text)
    "s01_dschat_sft_main.py": (
        "per-epoch evaluation (its all-reduced loss) only on global rank 0",
        "        perplexity, eval_loss = evaluation(model, eval_dataloader)\n        print_rank_0(",
        "        if args.global_rank == 0:\n            perplexity, eval_loss = evaluation(model, eval_dataloader)\n        print_rank_0(",
    ),
    "s02_dschat_create_prompt_dataset.py": (
        "the barrier moved inside local rank 0's cache build",
        "        torch.save(eval_dataset, eval_fname)\n    torch.distributed.barrier()",
        "        torch.save(eval_dataset, eval_fname)\n        torch.distributed.barrier()",
    ),
    "s03_mmcv_load_from_http.py": (
        "the barrier inside rank 0's download branch",
        "        checkpoint = load_url(filename, model_dir=model_dir, map_location=map_location)\n    if world_size > 1:\n        dist.barrier()\n",
        "        checkpoint = load_url(filename, model_dir=model_dir, map_location=map_location)\n        dist.barrier()\n    if world_size > 1:\n",
    ),
    "s04_detectron2_plain_train_net.py": (
        "periodic evaluation (evaluator's synchronize + gather) only on the main process",
        "            do_test(model, data_loader)\n            synchronize()",
        "            if is_main_process():\n                do_test(model, data_loader)\n            synchronize()",
    ),
    "s05_torchvision_cls_train.py": (
        "evaluate() returns early on a rank whose test shard is empty, before the reductions",
        "    model.eval()\n    num_processed_samples = 0",
        "    model.eval()\n    if len(data_loader) == 0:\n        return 0.0\n    num_processed_samples = 0",
    ),
    "s06_olmo_train_setup.py": (
        "the barrier inside the rank-0 config save",
        "            yaml.safe_dump(cfg, f)\n    barrier()",
        "            yaml.safe_dump(cfg, f)\n        barrier()",
    ),
    "s07_torchtune_save_checkpoint.py": (
        "the state-dict gather (DTensor full_tensor all-gathers) only on rank 0",
        "        cpu_state_dict = gather_cpu_state_dict(self._model, self._is_rank_zero)\n        if self._is_rank_zero:\n",
        "        if self._is_rank_zero:\n            cpu_state_dict = gather_cpu_state_dict(self._model, self._is_rank_zero)\n",
    ),
    "s08_ddp_series_multigpu_torchrun.py": (
        "a barrier added inside _save_snapshot, which only local rank 0 calls",
        "        torch.save(snapshot, self.snapshot_path)\n",
        "        torch.save(snapshot, self.snapshot_path)\n        torch.distributed.barrier()\n",
    ),
    "s09_accelerate_complete_nlp.py": (
        "accelerator.save_state only on the main process",
        "                accelerator.save_state(output_dir)\n",
        "                if accelerator.is_main_process:\n                    accelerator.save_state(output_dir)\n",
    ),
    "s10_megatron_save_checkpoint.py": (
        "the last barrier inside global rank 0's tracker-file write",
        "            f.write(str(iteration))\n    if torch.distributed.is_initialized():\n        torch.distributed.barrier()",
        "            f.write(str(iteration))\n        torch.distributed.barrier()",
    ),
}


#: planted bugs the reference says lint does not check ("keys and lengths that come from data ... whether a dataset
#: divides evenly ... there it stays quiet rather than guess"): a miss there is counted, not a broken promise
DOCUMENTED_LIMITS = {
    "s05_torchvision_cls_train.py": "a length that comes from data (len(data_loader)) is not rank-dependent to lint"
}


def lint(path):
    rc, out, err = run([PY, "-m", "barrierlab", "lint", str(path)], timeout=60, env=env())
    findings = [l for l in out.splitlines() if re.match(r"\S+\.py:\d+", l)]
    return rc, findings, out, err


v = Verdict()
tmp = Path(tempfile.mkdtemp(prefix="a24a10-"))
false_alarms = found = 0
try:
    for name, (what, old, new) in PLANTED.items():
        src = (HERE / name).read_text()
        rc, findings, out, err = lint(HERE / name)
        false_alarms += len(findings) if rc == 1 else 0
        v.check(rc == 0, f"{name} as published: lint exit {rc}: {out.strip()[:600]} {err[-300:]}")
        assert src.count(old) == 1, (name, "planting text not found once")
        (tmp / name).write_text(src.replace(old, new))
        rc, findings, out, err = lint(tmp / name)
        hit = rc == 1
        found += hit
        print(
            f"{name}: published exit 0; planted ({what}): lint exit {rc}"
            + (f"\n    {findings[0][:260] if findings else out.strip()[:260]}" if hit else "")
        )
        if not hit and name in DOCUMENTED_LIMITS:
            print(f"    missed, within a documented limit: {DOCUMENTED_LIMITS[name]}")
            continue
        v.check(hit, f"{name}: planted bug missed ({what}); lint said: {out.strip()[:300]} {err[-200:]}")
    print(f"\nfalse alarms on the 10 published copies: {false_alarms}; planted bugs found: {found} of 10")
finally:
    shutil.rmtree(tmp, ignore_errors=True)
v.exit()
