"""URL slugs."""


def slugify(text: str) -> str:
    """Lower-case words (letters and digits only) joined by single hyphens."""
    kept = "".join(c for c in text if c.isalnum() or c.isspace())
    return "-".join(kept.lower().split())
