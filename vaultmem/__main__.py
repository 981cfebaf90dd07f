"""`python -m vaultmem` runs the CLI."""

from vaultmem.cli.entry import main

main()
