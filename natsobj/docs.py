"""Where the documentation is read: the wheel ships no ``docs/``, so a message that sends the
user to a page names the page's address on the project's home, never a path in the source."""

from __future__ import annotations

DOCS_URL = "https://github.com/natsobj/natsobj/blob/main/docs"


def doc_url(page: str, section: str = "") -> str:
    """The address of ``docs/<page>.md``, at the heading whose anchor is ``section`` if given."""
    return f"{DOCS_URL}/{page}.md" + (f"#{section}" if section else "")
