"""Integrations with agents and tools: the MCP server, Claude Code hooks, import and export."""
