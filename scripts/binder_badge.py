"""The README's Binder badge, derived from the repository named in pyproject.toml ([project.urls] Repository).

    python3 scripts/binder_badge.py                    # print the badge the README should carry
    python3 scripts/binder_badge.py --check            # exit 1 if the README's badge differs
    python3 scripts/binder_badge.py --write            # rewrite the README's badge
    python3 scripts/binder_badge.py --from-git-remote  # name the repository after `git remote get-url origin`, then write

Publishing the course under another name is that one line of pyproject.toml (or --from-git-remote in the new
clone). Standard library only.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIRST_NOTEBOOK = "notebooks/00_what_is_a_barrier.ipynb"
_REPOSITORY = re.compile(r'^(Repository\s*=\s*")https://github\.com/([^/"]+/[^/"]+)(")', re.M)
_BADGE = re.compile(r"\[!\[Binder\]\(https://mybinder\.org/badge_logo\.svg\)\]\([^)]*\)")
_GITHUB_REMOTE = re.compile(
    r"^(?:https://github\.com/|git@github\.com:|ssh://git@github\.com/)([^/]+/[^/]+?)(?:\.git)?/?$"
)


def repository(root: Path = ROOT) -> str:
    """``owner/name`` of the published repository, from pyproject.toml."""
    match = _REPOSITORY.search((root / "pyproject.toml").read_text())
    if not match:
        raise SystemExit(
            'binder_badge: pyproject.toml has no [project.urls] Repository = "https://github.com/OWNER/NAME"'
        )
    return match[2]


def badge(repo: str) -> str:
    url = f"https://mybinder.org/v2/gh/{repo}/HEAD?urlpath=lab/tree/{FIRST_NOTEBOOK}"
    return f"[![Binder](https://mybinder.org/badge_logo.svg)]({url})"


def readme_badge(root: Path = ROOT) -> str | None:
    match = _BADGE.search((root / "README.md").read_text())
    return match[0] if match else None


def github_remote(root: Path = ROOT) -> str:
    """``owner/name`` of the ``origin`` remote, which must be on GitHub (Binder's ``gh`` provider)."""
    url = subprocess.run(
        ["git", "-C", str(root), "remote", "get-url", "origin"], capture_output=True, text=True, check=True
    ).stdout.strip()
    match = _GITHUB_REMOTE.match(url)
    if not match:
        raise SystemExit(f"binder_badge: origin is {url!r}, not a GitHub repository")
    return match[1]


def write(root: Path, repo: str) -> None:
    pyproject = root / "pyproject.toml"
    pyproject.write_text(_REPOSITORY.sub(rf"\g<1>https://github.com/{repo}\g<3>", pyproject.read_text(), count=1))
    readme = root / "README.md"
    text = readme.read_text()
    if not _BADGE.search(text):
        raise SystemExit("binder_badge: README.md has no Binder badge to rewrite")
    readme.write_text(_BADGE.sub(lambda _: badge(repo), text, count=1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--check", action="store_true")
    group.add_argument("--write", action="store_true")
    group.add_argument("--from-git-remote", action="store_true")
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.from_git_remote:
        write(args.root, github_remote(args.root))
    elif args.write:
        write(args.root, repository(args.root))
    elif args.check:
        expected, found = badge(repository(args.root)), readme_badge(args.root)
        if found != expected:
            print(f"binder_badge: README.md has\n  {found}\nexpected\n  {expected}", file=sys.stderr)
            return 1
    else:
        print(badge(repository(args.root)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
