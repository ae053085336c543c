"""Rich renderables for every view; the CLI prints them, the TUI embeds them."""

FOLD = 400


def fold(text: str, limit: int = FOLD) -> str:
    """Long text cut to `limit` characters with a note of what was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… (+{len(text) - limit} chars)"
