"""statectl: inspect LangGraph checkpoints safely, without the application's code."""
