"""One screen per view: threads, thread, help."""
