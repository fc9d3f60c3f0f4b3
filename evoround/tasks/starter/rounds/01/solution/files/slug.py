"""URL slugs."""


def slugify(text: str) -> str:
    """Lower-case words joined by single hyphens."""
    return "-".join(text.lower().split())
