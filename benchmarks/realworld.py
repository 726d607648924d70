"""Run every real-world item (tests/realworld/) through bl.run (recording on), torchrun and lint, and print
one row per item and the aggregate figures of issue 12's "Done when" criteria.

    PYTHONPATH=src python benchmarks/realworld.py [--reps 3] [--no-script] [--no-runner] [--only SUBSTRING ...]

Columns: ``lab`` — correct items: runs that finished on every rank out of ``--reps``; buggy items: the
diagnosis kind, and whether it stayed within the deadline; ``named`` — the BUG/WAITS lines of the item's
own file the diagnosis names; ``script`` — torchrun's (or the item's own mp.spawn's) exit code and time,
run in a private network namespace (needs root + unshare); ``runner`` — barrierlab's script runner
(``barrierlab run item.py -n N``; a self-initialising item through ``bl.run(main, N, args=(N,), init=False)``):
correct items finished on every rank, buggy items did not; ``lint`` — number of findings, and the
BUG/WAITS lines among them.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "realworld"))

import _harness as harness  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=3, help="bl.run repetitions of each correct item (default 3)")
    parser.add_argument("--no-script", action="store_true", help="skip the torchrun / mp.spawn runs")
    parser.add_argument("--no-runner", action="store_true", help="skip barrierlab's script runner")
    parser.add_argument("--only", nargs="*", default=[], help="run only items whose name contains one of these")
    args = parser.parse_args()

    import barrierlab as bl

    bl.warm_up(wait=True)
    scripts = not args.no_script and harness.isolated()
    items = [i for i in harness.discover() if not args.only or any(o in i.name for o in args.only)]
    rows = []
    correct_ok = correct_lint_clean = 0
    buggy_bounded = buggy_same = buggy_named = buggy_flagged = buggy_in_lab = 0
    script_ok = script_runs = 0
    runner_ok = runner_runs = runner_named = runner_buggy = 0
    unexpected: list[tuple[str, list[str]]] = []
    started = time.monotonic()
    print(f"{'item':<48} {'lab':<28} {'named':<9} {'script':<12} {'runner':<18} lint")
    for item in items:
        lab = named = "—"
        if True:  # self-initialising items run in the lab through bl.run(..., init=False)
            if item.kind == "correct":
                outcomes = [harness.run_in_lab(item) for _ in range(args.reps)]
                passed = sum(o.ok for o in outcomes)
                correct_ok += passed == args.reps
                lab = f"{passed}/{args.reps} finished ({max(o.elapsed for o in outcomes):.1f} s)"
            else:
                o = harness.run_in_lab(item)
                buggy_in_lab += 1
                buggy_bounded += o.bounded
                buggy_same += harness.SAME_CALLS in o.headline or o.kind == "ok"
                buggy_named += bool(o.named_lines)
                lab = f"{o.kind}{'' if o.bounded else ' UNBOUNDED'} ({o.elapsed:.1f} s)"
                named = ",".join(map(str, sorted(o.named_lines))) or "no"
        script = "—"
        if scripts:
            s = harness.run_as_script(item)
            script_runs += 1
            good = s.bounded and ((s.returncode == 0) == (item.kind == "correct"))
            script_ok += good
            script = f"{'killed' if s.returncode is None else 'rc=' + str(s.returncode)} {s.elapsed:.0f}s"
            if not good:
                unexpected.append((item.name, s.output.strip().splitlines()[-12:]))
        runner = "—"
        if not args.no_runner:
            o = harness.run_with_script_runner(item)
            runner_runs += 1
            good = o.bounded and o.ok == (item.kind == "correct")
            runner_ok += good
            if item.kind == "buggy":
                runner_buggy += 1
                runner_named += bool(o.named_lines)
            runner = f"{'as expected' if good else 'UNEXPECTED'} {o.elapsed:.1f}s"
        lint = harness.lint_item(item)
        if item.kind == "correct":
            correct_lint_clean += not lint.findings
            lint_text = f"{len(lint.findings)} findings"
        else:
            buggy_flagged += bool(lint.flagged_lines)
            at = ",".join(map(str, sorted(lint.flagged_lines))) or "no marked line"
            lint_text = f"{len(lint.findings)} findings, at {at}"
        print(f"{item.name:<48} {lab:<28} {named:<9} {script:<12} {runner:<18} {lint_text}", flush=True)
        rows.append(item)

    correct = [i for i in items if i.kind == "correct"]
    buggy = [i for i in items if i.kind == "buggy"]
    correct_in_lab = correct
    print()
    print(
        f"items: {len(correct)} correct, {len(buggy)} buggy ({sum(i.self_init for i in items)} self-initialising, "
        f"in the lab through init=False); {time.monotonic() - started:.0f} s"
    )
    if correct_in_lab:
        print(
            f"correct, bl.run: {correct_ok}/{len(correct_in_lab)} finished on every rank in "
            f"{args.reps} of {args.reps} runs"
        )
    if correct:
        print(f"correct, lint: {correct_lint_clean}/{len(correct)} with no finding")
    if buggy_in_lab:
        print(
            f"buggy, bl.run: {buggy_bounded}/{buggy_in_lab} within the deadline; {buggy_same} with the "
            f"'same collective calls' (or ok) headline; {buggy_named}/{buggy_in_lab} "
            f"({100 * buggy_named / buggy_in_lab:.0f} %) name the BUG or WAITS line (target 85 %)"
        )
    if buggy:
        print(
            f"buggy, lint: {buggy_flagged}/{len(buggy)} ({100 * buggy_flagged / len(buggy):.0f} %) flagged at the "
            "BUG or WAITS line (target 60 %)"
        )
    if runner_runs:
        print(
            f"script runner: {runner_ok}/{runner_runs} as expected (correct finished on every rank, buggy did not, "
            f"all bounded); {runner_named}/{runner_buggy} buggy diagnoses name the BUG or WAITS line"
        )
    if scripts:
        print(f"script path: {script_ok}/{script_runs} as expected (correct exit 0, buggy non-zero, all bounded)")
        for name, tail in unexpected:
            print(f"\n{name}: unexpected script outcome; last lines:")
            print("\n".join("    " + line for line in tail))
    else:
        print("script path: skipped (needs root, unshare and ip, or --no-script was given)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
