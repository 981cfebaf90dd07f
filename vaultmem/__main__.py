"""`python -m vaultmem` runs the CLI."""

from .cli import main

main()
