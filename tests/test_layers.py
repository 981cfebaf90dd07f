"""The package's layers, held by reading every module's imports with `ast`.

Every `import` counts, at module level and inside functions: a lazy import is
still a dependency, it only runs later. Imports under `if TYPE_CHECKING:` count
for the layer rules (a type is a dependency of the design) but not for cycles
(they never run).

Layers, lowest first; a module may import from its own layer and the layers
below it, nothing above:

    base          vaultmem.errors, vaultmem.timefmt, vaultmem.clock, vaultmem.config
    core          vaultmem.core.*           pure rules
    store         vaultmem.store.*          files, catalog, ledger, template, discovery
    search        vaultmem.search.*         bm25, embed, vectors, engine
    ops           vaultmem.ops.*            corrections, promotion, audit, provenance
    service       vaultmem.service.*        watcher, socket server and client
    vault         vaultmem.vault            the public facade (and the package __init__)
    integrations  vaultmem.integrations.*   agents, MCP, importers, exporters
    cli           vaultmem.cli.*            the command line (and __main__)

`integrations` and `cli` are both top layers; `cli` is above: it wires the
integrations to commands (`vaultmem mcp`, `import`, `hook`, `install`), while no
integration needs the command line. Whatever reads the click command tree
(the command checker, the skill writer) is therefore part of `cli`.

`core` is pure on top of that: no I/O. It imports nothing from store, search,
ops, service, vault, cli or integrations; from base only errors, config (for the
Config type) and timefmt (the pure datetime helpers; `vaultmem.clock` reads the
clock and the environment, so core takes `now` as an argument instead); and none
of os, pathlib, socket, subprocess, sqlite3, whoosh, numpy, onnxruntime,
watchdog, filelock, click.

Edges are checked as written: `from vaultmem import clock` is an import of
vaultmem.clock; importing a submodule does not count as importing its package's
__init__. The only exceptions are PENDING: imports in files being rewritten
elsewhere, each with the fix it needs; a PENDING edge that is gone fails the
test too, so the list only shrinks.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "vaultmem"

LAYERS = ("base", "core", "store", "search", "ops", "service", "vault", "integrations", "cli")

# The allowed edges, layer -> layers it may import from (its own and every lower one).
ALLOWED = {layer: set(LAYERS[: index + 1]) for index, layer in enumerate(LAYERS)}

BASE_MODULES = {"vaultmem.errors", "vaultmem.timefmt", "vaultmem.clock", "vaultmem.config"}
CORE_MAY_USE_FROM_BASE = {"vaultmem.errors", "vaultmem.timefmt", "vaultmem.config"}
CORE_FORBIDDEN_LIBRARIES = {"os", "pathlib", "socket", "subprocess", "sqlite3", "whoosh", "numpy", "onnxruntime",
                            "watchdog", "filelock", "click"}


# (importer, imported) -> the fix. Only files under rewrite in another branch belong here.
PENDING = {
    ("vaultmem.ops.corrections", "vaultmem.vault"):
        "type-only import of Added: define Added in ops/corrections.py (or core) and let vault.py import it",
    ("vaultmem.ops.corrections", "vaultmem.service.server"):
        "similar() asks the watcher itself: let the caller (Vault.add) pass the search in, "
        "or ask through an injected client",
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def layer_of(module: str) -> str:
    if module in BASE_MODULES:
        return "base"
    if module in ("vaultmem", "vaultmem.vault"):
        return "vault"
    if module == "vaultmem.__main__":
        return "cli"
    part = module.split(".")[1]
    assert part in LAYERS, f"{module} is in no layer; add it to tests/test_layers.py"
    return part


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports_of(module: str) -> list[tuple[str, int, bool]]:
    """(imported module, line, type-only) for every import in `module`, resolved to vaultmem modules
    where the name is one (`from vaultmem import clock` imports vaultmem.clock); others as written."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []

    def visit(node, type_only):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                visit(child, True)
            for child in node.orelse:
                visit(child, type_only)
            return
        if isinstance(node, ast.Import):
            found.extend((alias.name, node.lineno, type_only) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module
            if source == "__future__":
                return
            for alias in node.names:
                candidate = f"{source}.{alias.name}"
                found.append((candidate if candidate in MODULES else source, node.lineno, type_only))
        for child in ast.iter_child_nodes(node):
            visit(child, type_only)

    visit(tree, False)
    return found


def internal_imports(module: str, *, runtime_only: bool = False) -> list[tuple[str, int]]:
    result = []
    for name, line, type_only in imports_of(module):
        if runtime_only and type_only:
            continue
        if name == "vaultmem" or name.startswith("vaultmem."):
            while name not in MODULES:  # `import vaultmem.x.y` of a name inside a module
                name = name.rpartition(".")[0]
            if name != module:
                result.append((name, line))
    return result


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path [a, b, ..., a], or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def walk(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                cycle = walk(nxt)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = walk(node)
            if cycle:
                return cycle
    return None


def test_every_module_is_in_a_layer():
    for module in MODULES:
        assert layer_of(module) in LAYERS


def test_no_import_cycles():
    graph = {module: {name for name, _line in internal_imports(module, runtime_only=True)} for module in MODULES}
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_layers_import_only_downwards():
    wrong, pending_seen = [], set()
    for module in MODULES:
        for name, line in sorted(set(internal_imports(module))):
            if layer_of(name) in ALLOWED[layer_of(module)]:
                continue
            if (module, name) in PENDING:
                pending_seen.add((module, name))
                continue
            wrong.append(f"{MODULES[module].relative_to(PACKAGE.parent)}:{line} {module} ({layer_of(module)}) "
                         f"imports {name} ({layer_of(name)})")
    assert not wrong, "imports against the layer order:\n" + "\n".join(wrong)
    fixed = set(PENDING) - pending_seen
    assert not fixed, f"fixed, remove from PENDING in tests/test_layers.py: {sorted(fixed)}"


def test_the_package_exports_come_from_the_facade_or_below():
    """`vaultmem/__init__.py` imports its names by string (import_module): check those too."""
    import vaultmem

    for name, target in vaultmem._EXPORTS.items():
        module = f"vaultmem.{target}"
        assert module in MODULES, name
        assert layer_of(module) in ALLOWED["vault"], f"vaultmem.{name} comes from {module} ({layer_of(module)})"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if layer_of(m) == "core"))
def test_core_is_pure(module):
    wrong = []
    for name, line, _type_only in sorted(set(imports_of(module))):
        top = name.split(".")[0]
        if top in CORE_FORBIDDEN_LIBRARIES:
            wrong.append(f"line {line}: {name} (I/O)")
        elif top == "vaultmem":
            resolved = name
            while resolved not in MODULES:
                resolved = resolved.rpartition(".")[0]
            if layer_of(resolved) != "core" and resolved not in CORE_MAY_USE_FROM_BASE:
                wrong.append(f"line {line}: {resolved}")
    assert not wrong, f"{module} must stay pure:\n" + "\n".join(wrong)


def test_the_walker_sees_lazy_submodule_and_type_only_imports():
    """The walker itself, on modules whose imports are known."""
    assert {n for n, _ in internal_imports("vaultmem.cli.entry")} >= {
        "vaultmem.integrations.claude_code",  # inside fast_hook
        "vaultmem.cli.main",  # inside main
    }
    assert "vaultmem.clock" in {n for n, _ in internal_imports("vaultmem.ops.promotion")}  # from vaultmem import clock
    typed = {n for n, _l, type_only in imports_of("vaultmem.vault") if type_only}
    assert "vaultmem.search.engine" in typed  # under `if TYPE_CHECKING:`
    assert "vaultmem.search.engine" in {n for n, _ in internal_imports("vaultmem.vault", runtime_only=True)}  # lazily
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
