"""What runs in the user's interpreter: loading their graph, its spec, writes through LangGraph's own savers."""
