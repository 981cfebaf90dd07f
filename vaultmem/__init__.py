"""vaultmem: an AI agent's memory as plain markdown notes in an Obsidian-compatible vault.

    from vaultmem import Vault
    vault = Vault.open("~/vaults/agent")
    added = vault.add("Staging runs Postgres 16", namespace="work")
    hits = vault.recall("postgres on staging", k=3)
    vault.grade(added.note.id, "good")

Names are imported on first use, so `import vaultmem.cli.main` (run on every agent
prompt) does not pay for YAML, FSRS or the indexes it may not need.

The package is layered; a module imports only from its own layer and the layers
below it (tests/test_layers.py checks every import, lazy ones included, and that
there are no import cycles):

    base          errors, timefmt, clock, config
    core          pure rules: no I/O, nothing above base (only errors, timefmt, config)
    store         files, catalog, ledger, template, discovery
    search        bm25, embed, vectors, engine
    ops           corrections, promotion, audit, provenance
    service       watch, server, client
    vault         vault.py, the facade (and this package's exports)
    integrations  claude_code, claude_settings, skill, mcp_server, importers, exporters
    cli           entry, main, agents, trust, common, output, command_check

`cli` sits above `integrations`: it wires them to commands and hands them what
only it knows (the command checker, the commands' syntax); no integration
imports the CLI.
"""

from importlib import import_module

_EXPORTS = {
    "BadInput": "errors",
    "ConflictError": "errors",
    "ModelUnavailable": "errors",
    "NoteError": "errors",
    "NotFound": "errors",
    "VaultmemError": "errors",
    "SecretFound": "errors",
    "Note": "core.model",
    "Added": "vault",
    "Related": "ops.corrections",
    "Vault": "vault",
    "init_vault": "vault",
    "Hit": "search.engine",
    "RecallEngine": "search.engine",
    "PromptBlock": "core.prompt",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'vaultmem' has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(list(globals()) + __all__)
