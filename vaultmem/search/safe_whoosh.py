"""Whoosh without code execution from its files.

Whoosh keeps its schema, segment list, stored fields and some postings as
pickles inside the index files (`_MAIN_*.toc`, `*.seg`). The BM25 index is a
cache under `.vaultmem/`, and caches travel: a synced folder, a zipped vault,
a shared drive. A pickle planted there would run code on the next recall.

So before any index is opened, every place Whoosh unpickles from a file goes
through an unpickler that builds only Whoosh's own classes and plain values
(numbers, strings, containers, compiled regexes for its analyzers); anything
else (os.system, subprocess, eval, any other module) raises
`UnsafeIndexFile`, and the engine rebuilds the index from the notes, which
are the truth. Writing keeps using the real pickle, so the files stay
readable by plain Whoosh.
"""

from __future__ import annotations

import io
import pickle
from types import SimpleNamespace

# What a Whoosh index legitimately pickles: plain values and containers (pickle
# protocol 2 names builtins `__builtin__` and rebuilds bytes with `_codecs.encode`),
# the data classes of Whoosh's schema, analysis, formats and codecs, its stemming
# functions, and vaultmem's own stemmer. Only classes from those Whoosh modules:
# a function such as `whoosh.util.loading.find_object` would import anything.
_PLAIN = {
    (module, name) for module in ("builtins", "__builtin__") for name in
    ("object", "set", "frozenset", "dict", "list", "tuple", "int", "float", "str", "bytes", "bool", "complex",
     "bytearray")
} | {("copyreg", "_reconstructor"), ("_codecs", "encode"), ("re", "_compile"), ("array", "_array_reconstructor"),
     ("array", "array"), ("collections", "defaultdict"), ("collections", "OrderedDict"), ("datetime", "datetime"),
     ("vaultmem.search.bm25", "multilingual_stem")}
_DATA_MODULES = ("whoosh.fields", "whoosh.formats", "whoosh.columns", "whoosh.codec.", "whoosh.analysis.")


class UnsafeIndexFile(pickle.UnpicklingError):
    """An index file asked to build something other than Whoosh's data: never built."""


class _Restricted(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        if (module, name) in _PLAIN:
            return super().find_class(module, name)
        if module.startswith(_DATA_MODULES):
            found = super().find_class(module, name)
            if isinstance(found, type):
                return found
        elif module.startswith("whoosh.lang."):
            found = super().find_class(module, name)
            if callable(found):  # stemmers
                return found
        raise UnsafeIndexFile(f"an index file asks for {module}.{name}; it was not built")


def loads(data: bytes, **_options):
    return _Restricted(io.BytesIO(data)).load()


def load(file, **_options):
    return _Restricted(file).load()


_done = False


def harden() -> None:
    """Route every unpickling in Whoosh's readers through `_Restricted` (idempotent)."""
    global _done
    if _done:
        return
    import importlib

    shim = SimpleNamespace(loads=loads, load=load, dumps=pickle.dumps, dump=pickle.dump,
                           HIGHEST_PROTOCOL=pickle.HIGHEST_PROTOCOL, UnpicklingError=pickle.UnpicklingError)
    for module_name, names in (
        ("whoosh.index", {"pickle": shim}),
        ("whoosh.filedb.fileindex", {"pickle": shim}),
        ("whoosh.codec.whoosh3", {"loads": loads}),
        ("whoosh.codec.whoosh2", {"loads": loads}),
        ("whoosh.codec.plaintext", {"loads": loads}),
        ("whoosh.columns", {"loads": loads}),
        ("whoosh.formats", {"loads": loads}),
        ("whoosh.filedb.misc", {"loads": loads}),
        ("whoosh.filedb.structfile", {"load_pickle": load}),
    ):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue  # a Whoosh without that module has nothing there to unpickle
        for attribute, value in names.items():
            if hasattr(module, attribute):
                setattr(module, attribute, value)
    _done = True
