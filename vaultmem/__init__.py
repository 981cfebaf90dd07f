"""vaultmem: an AI agent's memory as plain markdown notes in an Obsidian-compatible vault.

    from vaultmem import Vault
    vault = Vault.open("~/vaults/agent")
    note = vault.add("Staging runs Postgres 16", namespace="work")
    vault.grade(note.id, "good")
"""

from .errors import BadInput, ConflictError, ModelUnavailable, NoteError, NotFound, VaultmemError
from .model import Note
from .vault import Vault, init_vault

__all__ = [
    "BadInput",
    "ConflictError",
    "ModelUnavailable",
    "Note",
    "NoteError",
    "NotFound",
    "Vault",
    "VaultmemError",
    "init_vault",
]
