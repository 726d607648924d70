#!/usr/bin/env bash
# Set up what the browser tests (tests/browser/) need, and say what was done. Safe to run again: it only
# installs what is missing.
#
#   scripts/setup_browser.sh [VENV]        (default .venv; `make test` runs it)
#
# - Chromium: uses $BARRIERLAB_CHROMIUM or chromium / chromium-browser / google-chrome on PATH. If none is
#   found and this runs as root on a system with apt-get (CI, containers), installs Debian's `chromium`.
#   Otherwise it only says so: the browser tests then skip (or fail when CI is set).
# - Playwright: `pip install -r requirements-browser.txt` into the venv. Playwright's own browser download
#   (`playwright install`) is never used.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${1:-.venv}"
PY="$VENV/bin/python"

find_chromium() {
    if [ -n "${BARRIERLAB_CHROMIUM:-}" ]; then
        [ -x "$BARRIERLAB_CHROMIUM" ] && echo "$BARRIERLAB_CHROMIUM"
        return 0
    fi
    for name in chromium chromium-browser google-chrome google-chrome-stable; do
        if command -v "$name" >/dev/null 2>&1; then command -v "$name"; return 0; fi
    done
}

chromium="$(find_chromium || true)"
if [ -n "$chromium" ]; then
    echo "setup_browser: Chromium present: $chromium"
elif [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup_browser: no Chromium found; installing Debian's chromium (apt-get, about a minute)"
    export DEBIAN_FRONTEND=noninteractive
    timeout 600 apt-get update -qq
    timeout 900 apt-get install -y -qq chromium >/dev/null
    chromium="$(find_chromium || true)"
    [ -n "$chromium" ] || { echo "setup_browser: apt-get installed chromium but it is not on PATH" >&2; exit 1; }
    echo "setup_browser: installed $chromium ($("$chromium" --version 2>/dev/null | head -n1))"
else
    echo "setup_browser: no Chromium found and cannot install it here (needs root and apt-get)."
    echo "setup_browser: the browser tests will skip (fail if CI is set). Install chromium or set BARRIERLAB_CHROMIUM."
fi

if [ ! -x "$PY" ]; then
    echo "setup_browser: no virtual environment at $VENV (run make setup first)" >&2
    exit 1
fi
if "$PY" -m pip install --quiet --disable-pip-version-check -r requirements-browser.txt --dry-run --report - 2>/dev/null \
        | "$PY" -c 'import json, sys; sys.exit(1 if json.load(sys.stdin).get("install") else 0)'; then
    echo "setup_browser: Playwright present: $("$PY" -c 'import importlib.metadata as m; print(m.version("playwright"))')"
else
    echo "setup_browser: installing requirements-browser.txt into $VENV"
    "$PY" -m pip install --quiet --disable-pip-version-check -r requirements-browser.txt
    echo "setup_browser: installed Playwright $("$PY" -c 'import importlib.metadata as m; print(m.version("playwright"))')"
fi
