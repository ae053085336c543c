"""LangGraph's algorithm over the rows: history, state, steps, diff, timeline, size, prune. No I/O of its own."""
