"""The `vaultmem` command line. Light on purpose: `entry` runs on every agent prompt,
and only the full CLI (`main`) imports click."""
