"""``python -m barrierlab`` (or ``barrierlab``): list and run scenarios, report torchrun records, lint files."""

from __future__ import annotations

import argparse
import inspect
import os
import sys

#: What ``barrierlab --help`` says, as plain text (argparse prints it as written).
DESCRIPTION = (
    "barrierlab (or: python -m barrierlab): list and run the lesson scenarios, run a training script on local "
    "ranks as torchrun would, report records made under torchrun, lint files for collectives only some ranks reach."
)

#: What ``--races`` does, in ``--help``.
RACES_HELP = (
    "list the file races barrierlab's ordering model finds (a read, rename or removal of a file another rank "
    "changed, with no call ordering them), and which of the run's orderings would not hold on NCCL; with "
    "--timeline, draw what orders each file handoff. Exit code 1 if there is a race"
)


#: What ``--timeline`` accepts, in ``--help``.
TIMELINE_HELP = (
    "a .png, .pdf, .svg... file in a writable folder, checked before anything runs; without an extension, .png"
)


def report_help() -> str:
    """What ``barrierlab report --help`` says about the folder it reads, which it did not write."""
    from barrierlab._files import SOURCE_LIMIT

    return (
        "Timeline and diagnosis from a folder of rank records made under torchrun (rank*.events, rank*.outcome). "
        "Every file in it is untrusted input: only regular rank files of bounded size are read. Call sites are "
        "shown as file:line; the line of code itself only from a regular .py file of at most "
        f"{SOURCE_LIMIT >> 20} MiB that the records name (never from another kind of file, a FIFO, a device "
        "or a larger file), and only until about a second has been spent reading such files."
    )


def _list(args) -> int:
    from barrierlab.scenarios import available

    names = available()
    width = max(map(len, names), default=0)
    for name, doc in sorted(names.items()):
        print(f"{name:<{width}}  {doc}")
    return 0


def _run(args) -> int:
    import barrierlab as bl
    from barrierlab.script import is_script

    if args.module is not None:
        if args.scenario is not None:  # `run -m pkg.train ARG`: like python -m, what follows is the module's
            args.kwargs = [args.scenario, *args.kwargs]
        return _run_script(args)
    if args.scenario is None:
        args.parser.error("the following arguments are required: scenario (or -m MODULE)")
    if is_script(args.scenario):
        return _run_script(args)
    if args.script_args:
        print(
            f"barrierlab run: arguments after -- are for a script; {args.scenario!r} is a scenario name",
            file=sys.stderr,
        )
        return 2
    from barrierlab.scenarios import available, load
    from barrierlab.torchrun import parse_kwargs

    if args.scenario not in available():  # before anything starts: one line, as argparse says a bad argument
        where = "a folder without a __main__.py, not a script" if os.path.isdir(args.scenario) else ""
        args.parser.error(
            f"argument scenario: {where or 'no such scenario or script'}: {args.scenario!r} "
            "(barrierlab list names the scenarios; a script is a path to a .py file)"
        )
    scenario = load(args.scenario)
    try:  # attack13 a15: the arguments are checked against the scenario before any rank starts
        kwargs = parse_kwargs(args.kwargs)
        inspect.signature(scenario).bind(**kwargs)
    except SystemExit as error:  # parse_kwargs: not key=value
        args.parser.error(f"argument kwargs: {error}")
    except TypeError as error:
        names = ", ".join(inspect.signature(scenario).parameters) or "none"
        args.parser.error(f"argument kwargs: {args.scenario} does not take these: {error} (it takes: {names})")
    try:
        run = bl.run(
            scenario,
            args.nproc,
            kwargs=kwargs,
            timeout=args.timeout,
            deadline=args.deadline,
            linger=args.linger,
        )
    except (TypeError, ValueError) as error:
        print(f"barrierlab run: {error}", file=sys.stderr)
        return 2
    return _show(run, args.timeline, args.races)


def _show(run, timeline: str | None, races: bool = False) -> int:
    """Print a run, its diagnosis and ledger, draw its timeline if asked; 0 iff every rank finished (and, with
    ``races``, nothing raced). What the ranks wrote is printed with its control characters escaped
    (``_protocol.terminal_text``), and so are the races (their paths are the learner's)."""
    from barrierlab._protocol import terminal_text

    print(terminal_text(f"{run}\n\n{run.diagnosis}\n\n{run.ledger()}"))
    found = []
    if races:
        found = run.races()
        print()
        print(terminal_text(races_text(run, found)))
    code = 0 if run.ok and not found else 1
    if timeline:  # checked before the run (_timeline_file): the name given, with the format's extension
        try:
            run.timeline(handoffs=races).savefig(timeline, dpi=120)
        except OSError as error:  # the folder changed since the check: the run's results stand, printed above
            print(
                f"barrierlab: the timeline was not written to {timeline!r}: {error.strerror or error}", file=sys.stderr
            )
            return max(code, 2)
        except ValueError as error:  # too many ranks to draw (a folder can say it holds thousands)
            print(f"barrierlab: the timeline was not drawn: {error}", file=sys.stderr)
            return max(code, 2)
        print(f"\ntimeline written to {timeline}")
    return code


def races_text(run, found: list) -> str:
    """What ``--races`` prints: the races of the run on gloo, how many file handoffs were ordered, and the
    orderings of the run that would not hold on NCCL (the model, host side)."""
    from barrierlab import ordering
    from barrierlab.ordering_table import nccl_view

    handoffs = ordering.order(run).handoff_count()
    lines = [
        "Races (barrierlab's ordering model, on gloo: two ranks' accesses of a file, one changing it, that no "
        f"call orders): {len(found) or 'none'}",
        *(f"- {race}" for race in found),
        *(
            [
                f"Not judged: {found.undecided} pair(s) of file accesses before the oldest collective torch's flight "
                "record kept (raise TORCH_FR_BUFFER_SIZE): a DDP gradient all_reduce there may order them"
            ]
            if getattr(found, "undecided", 0)
            else []
        ),
        f"File handoffs the run's calls ordered (a change of a file before another rank's use of it): {handoffs}",
        "",
        "On GPUs (NCCL, as the host sees it; the model, not a measurement: CUDA streams are not modelled):",
        *("  " + line for line in str(nccl_view(run)).splitlines()),
    ]
    return "\n".join(lines)


def _run_script(args) -> int:
    """``barrierlab run train.py -n 4 -- ARGS``: the script's ``__main__`` on N ranks, as torchrun would
    run it; exit code 0 iff every rank finished."""
    from barrierlab.launch import warm_up
    from barrierlab.script import check_module, check_script, needs_preloaded, run_module, run_script

    argv = [*args.kwargs, *args.script_args]
    try:
        if args.module is not None:  # a missing script or module is refused before torch is imported anywhere
            source = check_module(args.module, argv)
        else:
            source = check_script(args.scenario, argv)
        # This process is no kernel: it imports torch (what the ranks use) and forks the warm process from
        # itself, so that the machine imports torch once, not twice at the same time (2.3-2.5 s for a 4-rank
        # barrier script at load 2.5 before, when `import torch` alone took 1.3 s). A training script usually
        # builds DDP: the warm process then imports DDP/dynamo/DCP once, before the ranks fork, not every rank.
        from barrierlab import _warmstart

        _warmstart.fork_early()
        warm_up()

        if needs_preloaded(source):
            warm_up(wait=True)
        if args.module is not None:
            run = run_module(args.module, args.nproc, argv, timeout=args.timeout, deadline=args.deadline)
        else:
            run = run_script(args.scenario, args.nproc, argv, timeout=args.timeout, deadline=args.deadline)
    except (TypeError, ValueError) as error:
        print(f"barrierlab run: {error}", file=sys.stderr)
        return 2
    return _show(run, args.timeline, args.races)


def _report(args) -> int:
    from barrierlab.collect import from_records

    try:
        run = from_records(args.folder)
    except (OSError, ValueError) as error:  # no records in it, or a folder that cannot be listed
        text = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        args.parser.error(f"argument folder: {args.folder!r}: {text}")
    return _show(run, args.timeline, args.races)


def _record_folder(text: str) -> str:
    """``report FOLDER``: an existing folder (a missing one, a file or a device is refused before anything is
    read, with argparse's one-line error and exit code 2)."""
    if not os.path.exists(text):
        raise argparse.ArgumentTypeError(f"{text!r} does not exist: give the folder of rank records")
    if not os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a folder: give the folder of rank records")
    return text


def _lint(args) -> int:
    from barrierlab.lint import run_command

    return run_command(args.paths)


#: Extensions ``--timeline`` accepts: the formats matplotlib writes with its default backends and Pillow
#: (``FigureCanvasBase.get_supported_filetypes()``; ``tests/test_cli_args.py`` checks they agree).
TIMELINE_FORMATS = (
    "avif", "eps", "gif", "jpeg", "jpg", "pdf", "pgf", "png", "ps", "raw", "rgba", "svg", "svgz", "tif", "tiff", "webp",
)  # fmt: skip


def _ranks(text: str) -> int:
    """``-n``: a whole number of ranks that ``barrierlab.run`` accepts."""
    from barrierlab.launch import MAX_WORLD_SIZE

    try:
        count = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number of ranks, got {text!r}") from None
    if not 1 <= count <= MAX_WORLD_SIZE:
        raise argparse.ArgumentTypeError(f"must be between 1 and {MAX_WORLD_SIZE} ranks, got {count}")
    return count


def _seconds(name: str):
    """``--timeout``/``--deadline``: seconds that ``barrierlab.run`` accepts (positive, finite, bounded)."""
    from barrierlab.launch import MAX_DEADLINE, MAX_TIMEOUT, _check_seconds

    def seconds(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number of seconds, got {text!r}") from None
        try:
            return _check_seconds(name, value, MAX_TIMEOUT if name == "timeout" else MAX_DEADLINE)
        except (TypeError, ValueError) as error:
            raise argparse.ArgumentTypeError(str(error).removeprefix(f"{name} ")) from None

    return seconds


def _timeline_file(text: str) -> str:
    """``--timeline PATH``: the file the figure will be written to, checked before anything runs: a name
    without an extension gets ``.png`` (matplotlib's default format, which it would add anyway), an extension
    must be a format matplotlib writes, and its folder must exist and be writable; an existing folder, FIFO or
    device of that name is refused (matplotlib would fail, or block, after the whole run)."""
    import stat

    path = text if os.path.splitext(text)[1] else text + ".png"
    extension = os.path.splitext(path)[1][1:].lower()
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(
            f"{text!r} is a folder: give a file name, such as {os.path.join(text, 'timeline.png')!r}"
        )
    try:  # a FIFO or device named without an extension: not a new figure.png beside it (attack20 a06)
        given = os.stat(text).st_mode
    except OSError:
        given = None
    if given is not None and not stat.S_ISREG(given) and path != text:
        raise argparse.ArgumentTypeError(
            f"{text!r} exists and is not a regular file: give a file name such as 'timeline.png'"
        )
    if extension not in TIMELINE_FORMATS:
        raise argparse.ArgumentTypeError(
            f"{path!r}: .{extension} is not a figure format matplotlib writes (use one of: {', '.join(TIMELINE_FORMATS)})"
        )
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise argparse.ArgumentTypeError(f"{path!r}: its folder {folder!r} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK) or not _can_create_in(folder):
        raise argparse.ArgumentTypeError(f"{path!r}: its folder {folder!r} is not writable")
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return path
    except OSError as error:
        raise argparse.ArgumentTypeError(f"{path!r}: {error.strerror}") from None
    if not stat.S_ISREG(mode):
        raise argparse.ArgumentTypeError(f"{path!r} exists and is not a regular file: it would not be replaced")
    if not os.access(path, os.W_OK):
        raise argparse.ArgumentTypeError(f"{path!r} exists and is not writable")
    return path


def _can_create_in(folder: str) -> bool:
    """Whether a file can be created in ``folder``, tried (a temporary file, removed at once): ``access`` says
    yes to root for any folder, /proc included, where saving the figure then fails after the whole run."""
    import tempfile

    try:
        fd, name = tempfile.mkstemp(dir=folder, prefix=".barrierlab-check-")
    except OSError:
        return False
    os.close(fd)
    try:
        os.unlink(name)
    except OSError:
        pass
    return True


def main(argv: list[str] | None = None) -> int:
    from barrierlab.launch import DEFAULT_DEADLINE_MARGIN, DEFAULT_TIMEOUT, DEFAULT_WORLD_SIZE

    parser = argparse.ArgumentParser(prog="barrierlab", description=DESCRIPTION)
    commands = parser.add_subparsers(dest="command", required=True)

    commands.add_parser("list", help="list the lesson scenarios").set_defaults(func=_list)

    run = commands.add_parser(
        "run",
        help="run a scenario, or a training script as torchrun would (run train.py -n 4 -- ARGS), "
        "locally on N ranks and explain what happened",
    )
    run.add_argument(
        "scenario",
        nargs="?",
        help="a scenario name (see: barrierlab list) or the path of a script (train.py, or a folder or zip with a __main__.py)",
    )
    run.add_argument(
        "-m",
        dest="module",
        metavar="MODULE",
        help="run a module of a package as python -m MODULE (torchrun -m) would, instead of a script",
    )
    run.add_argument(
        "kwargs",
        nargs="*",
        metavar="key=value | -- ARGS",
        help="keyword arguments of the scenario; for a script, its arguments after --",
    )
    run.add_argument(
        "-n", "--nproc", type=_ranks, default=DEFAULT_WORLD_SIZE, help=f"number of ranks (default {DEFAULT_WORLD_SIZE})"
    )
    run.add_argument(
        "--timeout",
        type=_seconds("timeout"),
        default=None,
        help=f"the default process group's timeout in seconds (default {DEFAULT_TIMEOUT:g}; groups made with "
        "new_group keep their own, else torch's 30 minutes). For a script it also replaces a "
        "timeout= the script passes to init_process_group (Lightning passes 1800 s), and says so; without --timeout the script's own "
        "timeout stays",
    )
    run.add_argument(
        "--deadline",
        type=_seconds("deadline"),
        default=None,
        help=f"wall-clock limit in seconds (default timeout+{DEFAULT_DEADLINE_MARGIN:g})",
    )
    run.add_argument("--linger", action="store_true", help="keep finished ranks alive until all are done")
    run.add_argument(
        "--timeline", metavar="PNG", type=_timeline_file, help=f"also save the timeline figure ({TIMELINE_HELP})"
    )
    run.add_argument("--races", action="store_true", help=RACES_HELP)
    run.set_defaults(func=_run, parser=run)

    report = commands.add_parser(
        "report",
        help="timeline and diagnosis from a folder recorded under torchrun",
        description=report_help(),
    )
    report.add_argument("folder", type=_record_folder)
    report.add_argument(
        "--timeline", metavar="PNG", type=_timeline_file, help=f"save the timeline figure ({TIMELINE_HELP})"
    )
    report.add_argument("--races", action="store_true", help=RACES_HELP)
    report.set_defaults(func=_report, parser=report)

    from barrierlab.lint import HELP as LINT_HELP

    lint = commands.add_parser(
        "lint",
        help="find collectives that only some ranks reach (.py or .ipynb)",
        description=LINT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    lint.add_argument("paths", nargs="+")
    lint.set_defaults(func=_lint)

    argv = list(sys.argv[1:] if argv is None else argv)
    rest: list[str] = []
    if "--" in argv:  # everything after -- is the script's own (argparse's own -- does not reach a subcommand)
        cut = argv.index("--")
        argv, rest = argv[:cut], argv[cut + 1 :]
    args, extra = parser.parse_known_args(argv)
    if extra and args.command == "run" and not any(word.startswith("-") for word in extra):
        # `run straggler -n 2 steps=2`: argparse leaves the words after an option out of the positional list
        # once the scenario was read (attack20 a15); they are the scenario's keyword arguments all the same
        args.kwargs = [*args.kwargs, *extra]
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if rest and args.command != "run":
        parser.error(f"arguments after -- are only for: run SCRIPT: {' '.join(rest)}")
    args.script_args = rest
    try:
        return args.func(args)
    except BrokenPipeError:  # the reader of the output went away (`barrierlab lint . | head`): stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so that flushing stdout at exit does not raise again
        return 1


def cli() -> None:
    """The ``barrierlab`` command: :func:`main`, then an exit that does not wait for the warm process to wind
    down (it ends by itself once this process's pipe closes, after every rank has been killed and reaped)."""
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    cli()
