"""Start barrierlab's warm process as a Jupyter kernel of the lab starts, before any cell runs.

The warm process (``barrierlab/_warmstart.py``, ``_warm.py``) imports torch once and forks the ranks. Started
by ``import barrierlab`` it competes with the kernel's own torch import, and a notebook that imports torch
*before* barrierlab (the usual order) starts it only after that import: its first ``bl.run`` then waits about
a second more. Loaded as an IPython extension of every kernel of the lab environment, this module starts it
while the learner is still reading, and ``import barrierlab`` adopts it. It imports neither barrierlab's
package (that imports torch) nor torch: it loads ``_warmstart.py`` by its path, under the name the package
uses, so the package finds the started process there.

    python -m barrierlab_kernel install     # the lab's setup runs this: the kernel config of this environment
    python -m barrierlab_kernel uninstall

The same install enables this module as a Jupyter server extension of the environment, which registers
:func:`strip_live_views` as a pre-save hook: notebooks saved from the lab keep no live view.

``BARRIERLAB_EAGER=0`` in the kernel's environment turns it off. A kernel that never imports barrierlab keeps
the process until it exits (the process ends when the kernel's pipe closes).
"""

from __future__ import annotations

import importlib.util
import os
import sys

#: The first line of the config file this module writes; a file without it is someone else's and is kept.
MARKER = "# barrierlab: start the warm process as a kernel starts (python -m barrierlab_kernel install)"
CONFIG = (
    MARKER
    + """
c.InteractiveShellApp.extensions.append("barrierlab_kernel")
"""
)


def load_ipython_extension(ipython) -> None:
    if os.environ.get("BARRIERLAB_EAGER", "1") == "0" or "barrierlab" in sys.modules:
        return
    try:
        package = importlib.util.find_spec("barrierlab")  # finds the package without running its __init__
        folder = list(package.submodule_search_locations or [])[0]
        spec = importlib.util.spec_from_file_location("barrierlab._warmstart", os.path.join(folder, "_warmstart.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules["barrierlab._warmstart"] = module  # where `from barrierlab import _warmstart` will find it
        spec.loader.exec_module(module)
        module.start_early()
    except Exception as error:  # never stop a kernel from starting: barrierlab starts it later instead
        sys.modules.pop("barrierlab._warmstart", None)
        print(
            f"barrierlab_kernel: did not start the warm process early ({type(error).__name__}: {error})",
            file=sys.stderr,
        )


#: Metadata of the live view's display (``barrierlab/live.py``): what the save hook below removes.
LIVE_VIEW_METADATA = {"barrierlab": "live view"}


def strip_live_views(model: dict, **_context) -> None:
    """Jupyter server pre-save hook: drop the live views' outputs from a notebook before it is written, so a
    notebook run and saved in the lab keeps exactly the outputs its run left (what nbval compares). The view
    empties itself when its run ends, but the emptied output would stay in the file."""
    if model.get("type") != "notebook" or not isinstance(model.get("content"), dict):
        return
    for cell in model["content"].get("cells") or ():
        outputs = cell.get("outputs") if isinstance(cell, dict) else None
        if outputs:
            cell["outputs"] = [
                output
                for output in outputs
                if not (
                    isinstance(output, dict)
                    and (output.get("metadata") or {}).get("barrierlab") == LIVE_VIEW_METADATA["barrierlab"]
                )
            ]


def _jupyter_server_extension_points() -> list[dict]:
    """Jupyter server extension entry: this module, enabled by the file :func:`install_save_hook` writes."""
    return [{"module": "barrierlab_kernel"}]


def _load_jupyter_server_extension(serverapp) -> None:
    """Add :func:`strip_live_views` to the server's pre-save hooks (beside any ``pre_save_hook`` of the user's).

    A ``ContentsManager.pre_save_hook`` setting would not do: Jupyter reads only the extension switches of the
    ``jupyter_server_config.d`` files, and a setting in a user's own config file would replace ours."""
    serverapp.contents_manager.register_pre_save_hook(strip_live_views)


def server_config_path(prefix: str | None = None) -> str:
    """The Jupyter server config file of the environment at ``prefix`` that enables this module's extension."""
    return os.path.join(prefix or sys.prefix, "etc", "jupyter", "jupyter_server_config.d", "barrierlab.json")


def install_save_hook(prefix: str | None = None) -> str:
    path = server_config_path(prefix)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write('{"ServerApp": {"jpserver_extensions": {"barrierlab_kernel": true}}}\n')
    return path


def config_path(prefix: str | None = None) -> str:
    """The kernel config file of the environment at ``prefix`` (this Python's by default)."""
    return os.path.join(prefix or sys.prefix, "etc", "ipython", "ipython_kernel_config.py")


def install(prefix: str | None = None) -> str:
    """Write the config file, or leave it if it is already ours; refuse to touch a file that is not."""
    path = config_path(prefix)
    if os.path.exists(path):
        with open(path) as f:
            if f.readline().rstrip("\n") != MARKER:
                raise SystemExit(
                    f"{path} exists and was not written by barrierlab; add this line to it instead:\n"
                    f'c.InteractiveShellApp.extensions.append("barrierlab_kernel")'
                )
        return path
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(CONFIG)
    return path


def uninstall(prefix: str | None = None) -> str | None:
    path = config_path(prefix)
    try:
        with open(path) as f:
            if f.readline().rstrip("\n") != MARKER:
                return None
    except FileNotFoundError:
        return None
    os.remove(path)
    return path


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args not in (["install"], ["uninstall"]):
        print("usage: python -m barrierlab_kernel install|uninstall", file=sys.stderr)
        return 2
    if args == ["install"]:
        hook = install_save_hook()
        print(f"barrierlab_kernel: notebooks saved in this environment's lab keep no live view ({hook})")
        print(f"barrierlab_kernel: kernels of this environment start the warm process early ({install()})")
    else:
        if os.path.exists(server_config_path()):
            os.remove(server_config_path())
        removed = uninstall()
        print(f"barrierlab_kernel: {'removed ' + removed if removed else 'nothing of ours to remove'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
