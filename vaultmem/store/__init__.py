"""The vault on disk: note files, the derived catalog, the ledger, the template and
discovery. Knows where things are and how to write them safely; not what they mean."""
