"""The chat page: ``GET /`` serves it, and :data:`STATIC_DIR` holds its script and style.

The page is plain HTML, CSS and JavaScript shipped in the package (no build step, no
CDN), so it works on a machine with no internet access. Loading it needs no API key: the
user pastes a workspace key into the page, which sends it to the ``/v1`` routes as a
bearer token, like any other client. ``app.py`` mounts :data:`STATIC_DIR` at
``/static``.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse

router = APIRouter(tags=["ui"])

#: The page's files, inside the package (``package-data`` ships them in the wheel).
STATIC_DIR = Path(__file__).resolve().parent.parent / "static"

#: Only this server's own script, style and API: nothing else loads or runs, so a page
#: that works here works offline, and an injected ``<script>`` would not run.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


@router.get("/", include_in_schema=False)
@router.head("/", include_in_schema=False)  # uptime checks probe with HEAD
async def chat_page() -> FileResponse:
    """The chat page, under a policy that lets it load and call only this server."""
    return FileResponse(
        STATIC_DIR / "index.html",
        media_type="text/html; charset=utf-8",
        headers={
            "Content-Security-Policy": CONTENT_SECURITY_POLICY,
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
            # Revalidate, so a new release's page (and its script names) is seen at once.
            "Cache-Control": "no-cache",
        },
    )
