"""Small wording helpers every text of a run uses (diagnosis, ledger, summaries), so ranks are listed alike."""

from __future__ import annotations

import re
import reprlib

#: What a group every rank makes does after some ranks skipped an earlier one (review71b M1, measured with plain
#: torch 2.13 on gloo, 4 ranks, new_group(timeout=2/4/8 s): the makers raised DistStoreError after 2/4/8 s; a
#: skipper either raised "Connect timeout" after 20/40 s or made the group and timed out in its first collective
#: after 2/4/8 s; review83d: a lone skipper among 4 ranks raised DistStoreError after one timeout, 3 runs of 3). The
#: five times: gloo waits for a pair's first connection five times the context's timeout
#: (facebookincubator/gloo gloo/transport/tcp/pair.h, Pair::waitUntil, `timeout_ * 5`, "Use a longer timeout when
#: waiting for initial connect", there since gloo 9a2d11d (2017) and still at cc44198 (2025); torch 2.13's message names
#: pair.h:311, the line it has there), and ProcessGroupGloo gives the context new_group's timeout. Measured with
#: torch 2.13 (tests/test_gloo_connect_timeout.py): 2 ranks, timeout 0.5/1/2 s, the listening rank of a pair whose
#: connecting rank never connects raised 'Connect timeout' after 2.52/5.00/10.01 s.
LATER_GROUP_FAILS = (
    "what happens varies from run to run: the ranks that made the skipped group may stay in its own new_group, "
    "or wait in the later new_group until its timeout (new_group's timeout=, else "
    "torch's default, 30 minutes on gloo, not the default group's) and raise a store timeout; the ranks that "
    "skipped it give the new group the skipped one's number and look for their peers under that group's store "
    "keys, so on gloo their new_group raises a store timeout (DistStoreError) after that timeout, or 'Connect "
    "timeout' after five times that timeout (gloo waits five times the timeout for a pair's first connection: "
    "Pair::waitUntil in facebookincubator/gloo's gloo/transport/tcp/pair.h, as torch 2.13 builds it), or "
    "returns, and their first collective on the group fails after the timeout"
)


def sentence_start(text: str) -> str:
    """``text`` with its first letter in upper case (the rest as it is): "ranks 0 and 1" -> "Ranks 0 and 1"."""
    return text[:1].upper() + text[1:]


def rank_list(ranks: list[int]) -> str:
    """'rank 2', 'ranks 1 and 3', 'ranks 1–15', 'ranks 0, 2 and 5'."""
    ranks = sorted(ranks)
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    if len(ranks) > 2 and ranks == list(range(ranks[0], ranks[-1] + 1)):
        return f"ranks {ranks[0]}–{ranks[-1]}"
    return "ranks " + ", ".join(map(str, ranks[:-1])) + f" and {ranks[-1]}"


def issuer_phrase(issuer: str) -> str:
    """Who issued a collective torch made itself, without the detail in brackets:
    "torch.distributed's broadcast (inside broadcast_object_list)" -> "torch.distributed's broadcast"."""
    return issuer.split(" (")[0]


def issuer_word(issuer: str) -> str:
    """Who issued a collective, in a word: "DDP backward's gradient all_reduce" -> "DDP", "Join's ..." -> "Join",
    "a functional all_reduce (DTensor / torch.compile)" -> "functional"."""
    head = issuer_phrase(issuer).split()
    if len(head) > 1 and head[0] == "a":
        head = head[1:]
    return head[0].removesuffix("'s").removesuffix("'") if head else "torch"


def library_of(issuer: str) -> str | None:
    """The installed package that issued a collective ("torchmetrics' barrier (inside sync)" -> "torchmetrics"),
    or None when torch did (record.library_issuer writes these phrases)."""
    match = re.match(r"^(\S+?)'s? \S+ \(inside ", issuer)
    return match.group(1) if match and match.group(1) not in ("torch", "torch.distributed") else None


def _bounded_repr() -> reprlib.Repr:
    shown = reprlib.Repr()
    shown.maxlevel, shown.maxstring, shown.maxother, shown.maxlong = 4, 120, 120, 60
    shown.maxlist = shown.maxtuple = shown.maxdict = shown.maxset = shown.maxfrozenset = shown.maxdeque = 8
    return shown


_REPR = _bounded_repr()


def short_repr(value: object, limit: int = 120) -> str:
    """``repr(value)`` bounded in depth and length (``reprlib``), never raising: a value returned by a rank
    may be nested a million levels deep, or have a ``__repr__`` that fails."""
    try:
        text = _REPR.repr(value)
    except BaseException as error:  # noqa: B036 - a broken __repr__ (even RecursionError) is the value's
        if isinstance(error, KeyboardInterrupt):
            raise
        text = f"<{type(value).__name__} object: repr failed with {type(error).__name__}>"
    return text if len(text) <= limit else text[: limit - 1] + "…"
