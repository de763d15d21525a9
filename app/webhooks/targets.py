"""Where a webhook may be sent: http(s) URLs whose host resolves to public addresses only.

Private, loopback, link-local and reserved ranges are refused (a webhook is a request our server makes on a user's
behalf: it must not reach the database, the metadata service or anything else inside our network), unless
AUTOGRADER_WEBHOOK_ALLOW_PRIVATE=true (CI runners on a private network; the tests). Checked at registration and
again before every attempt, because a name can resolve differently later.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from app.errors import Invalid


def check_target(url: str, *, allow_private: bool) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise Invalid("the webhook URL must be http:// or https:// with a host", field="url")
    if parts.username or parts.password:
        raise Invalid("the webhook URL must not carry credentials", field="url")
    if allow_private:
        return
    try:
        infos = socket.getaddrinfo(parts.hostname, parts.port or (443 if parts.scheme == "https" else 80))
    except (socket.gaierror, UnicodeError) as exc:
        raise Invalid(f"the webhook host does not resolve: {exc}", field="url") from exc
    for info in infos:
        address = ipaddress.ip_address(info[4][0])
        if not address.is_global:
            raise Invalid(
                f"the webhook host resolves to {address}, a private or loopback address "
                "(AUTOGRADER_WEBHOOK_ALLOW_PRIVATE=true allows that)",
                field="url",
            )
