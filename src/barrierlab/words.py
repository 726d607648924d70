"""Small wording helpers every text of a run uses (diagnosis, ledger, summaries), so ranks are listed alike."""

from __future__ import annotations

import re


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
