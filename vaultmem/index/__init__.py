"""Derived indexes over the notes (caches under .vaultmem/index/, rebuilt by `vaultmem reindex`)."""
