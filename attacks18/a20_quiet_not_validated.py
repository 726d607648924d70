"""Promise 5: every parameter validated first, with a message naming it.

nb01.check_vocab(fn, quiet=...) and nb02.check_save_atomically(save, quiet=...) take `quiet` (documented as a
bool) without checking it: quiet="yes", quiet=None or quiet=2 are accepted and the learner's code runs (4-rank
runs). check_arguments validates fn/seed/seeds/world_size/steps but not quiet.
Exits 0 when a non-bool quiet is refused before anything runs, 1 otherwise.
"""

import sys

from barrierlab.exercises import nb01, nb02

RAN = []


def fn(folder, build_seconds):
    return 1


def save(obj, path):
    return None


def main() -> int:
    accepted = []
    for label, call in (
        ("nb01.check_vocab(fn, quiet='yes')", lambda: nb01.check_vocab(fn, quiet="yes", seed=1)),
        ("nb02.check_save_atomically(save, quiet=2)", lambda: nb02.check_save_atomically(save, quiet=2, seed=1)),
    ):
        try:
            verdict = call()
        except (TypeError, ValueError) as error:
            print(f"{label}: {type(error).__name__}: {error}")
        else:
            print(f"{label}: ran, returned {str(verdict)[:90]!r}")
            accepted.append(label)
    if accepted:
        print("BROKEN: a non-bool `quiet` is accepted and the learner's code runs:", "; ".join(accepted))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
