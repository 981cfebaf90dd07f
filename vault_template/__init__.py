"""The files `vaultmem init` copies into a new vault (this file is not copied)."""
