"""An HTML page instead of the API's JSON when a page's form is over the body limit (app.limits answers 413).

The limit itself stays in app.limits.BodySizeLimit; this middleware sits outside it and, for page paths (not
/api/), swaps the JSON body of a 413 for a page that says what the limit is and how to go back.
"""

from __future__ import annotations

import html

from starlette.types import ASGIApp, Message, Receive, Scope, Send

_PAGE = """<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Too large · autograder</title><link rel="stylesheet" href="/static/app.css"></head>
<body><main class="container" id="main"><section class="card narrow">
<h1>That was too large</h1>
<div class="alert error" role="alert">{message}</div>
<p>Go back: your text is still in the form. Shorten it (each answer may have up to 10000 characters) or upload
the code as a file, and submit again.</p>
<p><a href="javascript:history.back()">Back to the form</a> · <a href="/">All problem sets</a></p>
</section></main></body></html>
"""


class HtmlTooLarge:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith("/api/"):
            await self.app(scope, receive, send)
            return
        swapping = False

        async def html_send(message: Message) -> None:
            nonlocal swapping
            if message["type"] == "http.response.start" and message["status"] == 413:
                swapping = True
                return
            if swapping and message["type"] == "http.response.body":
                limit = _limit_of(message.get("body", b""))
                body = _PAGE.format(message=html.escape(limit)).encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": 413,
                        "headers": [
                            (b"content-type", b"text/html; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()),
                            (b"cache-control", b"no-store"),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
            await send(message)

        await self.app(scope, receive, html_send)


def _limit_of(body: bytes) -> str:
    text = body.decode("utf-8", "replace")
    marker = "larger than "
    if marker in text:
        rest = text.split(marker, 1)[1]
        number = "".join(ch for ch in rest.split(" ", 1)[0] if ch.isdigit())
        if number:
            return f"The form sent more than {int(number):,} bytes, the most this site accepts at once."
    return "The form sent more than this site accepts at once."
