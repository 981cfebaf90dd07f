"""`python -m vaultmem` runs the CLI."""

from .entry import main

main()
