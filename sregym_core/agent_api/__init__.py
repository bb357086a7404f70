"""The surfaces an agent talks to: the conductor HTTP API and the MCP server with the agent tools."""
