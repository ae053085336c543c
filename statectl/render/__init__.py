"""Rich renderables for every view; the CLI prints them, the TUI embeds them."""
