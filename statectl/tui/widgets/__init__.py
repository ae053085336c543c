"""Reusable widgets: the timeline of checkpoints and the foldable, searchable document."""
