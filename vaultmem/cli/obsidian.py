"""`vaultmem obsidian install`: the Obsidian plugin into a vault (integrations/obsidian.py)."""

from __future__ import annotations

import click

from vaultmem.cli.common import _vault, common


@click.group()
def obsidian():
    """The Obsidian plugin: review, grade and trace memories inside Obsidian.

    Example: vaultmem obsidian install ~/vaults/agent
    """


@obsidian.command()
@click.argument("vault", required=False, type=click.Path(file_okay=False))
@common
def install(vault, out, vault_path):
    """Copy the plugin into VAULT/.obsidian/plugins/vaultmem/ and enable it (other plugins are kept).

    Reload Obsidian (or toggle the plugin under Settings > Community plugins) to start it.

    Example: vaultmem obsidian install ~/vaults/agent
    """
    from vaultmem.integrations.obsidian import install as install_plugin

    root = _vault(vault or vault_path).root
    result = install_plugin(root)
    done = "installed" if result["updated"] else "already up to date"
    out.emit(result, f"vaultmem plugin {result['version']} {done} in {result['plugin_dir']}"
             + ("; enabled in .obsidian/community-plugins.json" if result["enabled"] else "")
             + ". Reload Obsidian to use it.")


COMMANDS = (obsidian,)
