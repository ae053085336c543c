"""`statectl mcp`: statectl's read-only answers for coding agents, over the Model Context Protocol."""
