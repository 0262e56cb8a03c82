"""The installed ``bpe-openai`` wheel, used without importing its package.

``import bpe_openai`` parses the cl100k, o200k and voyage3 vocabularies into Python
dicts (about 65 MB and 0.3 s) before anything is asked of it. The SDK needs only two
things from the wheel: its ``o200k_base`` vocabulary file and its Rust extension
``bpe_openai._bindings``. Both are found through the import system's spec, and the
extension is loaded by itself. On a platform without the wheel both are absent and the
SDK counts with tiktoken alone.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
import threading
from pathlib import Path
from types import ModuleType

PACKAGE = "bpe_openai"
BINDINGS = "bpe_openai._bindings"

_lock = threading.Lock()


def package_dir() -> Path | None:
    """The directory of the installed ``bpe_openai`` package, found without importing
    it; None when it is not installed."""
    try:
        spec = importlib.util.find_spec(PACKAGE)
    except (ImportError, ValueError):  # blocked, or a half-imported module
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def load_bindings() -> ModuleType | None:
    """The Rust extension ``bpe_openai._bindings``; None when the wheel is not installed.
    Raises ImportError when the extension is there but cannot be loaded."""
    with _lock:
        loaded = sys.modules.get(BINDINGS)
        if loaded is not None:
            return loaded
        directory = package_dir()
        if directory is None:
            return None
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = directory / f"_bindings{suffix}"
            if path.is_file():
                break
        else:
            return None
        loader = importlib.machinery.ExtensionFileLoader(BINDINGS, str(path))
        spec = importlib.util.spec_from_file_location(BINDINGS, path, loader=loader)
        if spec is None:
            return None
        module = importlib.util.module_from_spec(spec)
        loader.exec_module(module)
        # Registered so that the application's own ``import bpe_openai`` reuses it: a
        # PyO3 extension can be initialised only once per process.
        sys.modules[BINDINGS] = module
        return module
