"""Where a webhook may be sent: http(s) URLs whose host resolves to public addresses only, and the address to use.

A webhook is a request our server makes on a user's behalf: it must not reach the database, the metadata service
or anything else inside our network. So every address the host resolves to must be public (not loopback, private,
link-local, multicast, reserved or unspecified), and so must any IPv4 address an IPv6 one carries: NAT64, 6to4,
IPv4-compatible, IPv4-mapped and Teredo addresses are refused outright (the translator or relay would deliver them
to an IPv4 host that may be inside), naming the embedded address where one can be read. `ipaddress.is_global`
alone is not enough: it calls `64:ff9b::7f00:1` (127.0.0.1 through NAT64), `2002:7f00:1::` and `224.0.0.1` global.

The host is resolved once per attempt, here, and the sender connects to the address that was checked
(`Target.addresses`), never resolving the name again: a name that answers a public address to the check and
127.0.0.1 to the connection (DNS rebinding) reaches nothing. Checked at registration and again before every
attempt, because a name can resolve differently later.

AUTOGRADER_WEBHOOK_ALLOW_PRIVATE=true (CI runners on a private network; the tests) allows private addresses; the
URL must still parse (a bad port or host is a 422 at registration, never a 500).
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass

import httpx

from app.errors import Invalid

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# IPv6 ranges that carry (or route to) an IPv4 address: refused whatever they carry.
_WRAPPERS = {
    ipaddress.IPv6Network("64:ff9b::/96"): "a NAT64 address",
    ipaddress.IPv6Network("64:ff9b:1::/48"): "a local-use NAT64 address",
    ipaddress.IPv6Network("2002::/16"): "a 6to4 address",
    ipaddress.IPv6Network("2001::/32"): "a Teredo address",
    ipaddress.IPv6Network("::ffff:0:0/96"): "an IPv4-mapped address",
    ipaddress.IPv6Network("::/96"): "an IPv4-compatible address",
}
# IPv4 ranges this Python's `is_global` lets through that no webhook receiver has: IETF protocol assignments and
# the 6to4 relay anycast prefix.
_IPV4_REFUSED = (ipaddress.IPv4Network("192.0.0.0/24"), ipaddress.IPv4Network("192.88.99.0/24"))
_ALLOW_HINT = "(AUTOGRADER_WEBHOOK_ALLOW_PRIVATE=true allows that)"


@dataclass(frozen=True)
class Target:
    """A checked URL: connect to one of ``addresses`` (checked), sending ``host_header``; TLS names ``server_name``."""

    url: httpx.URL
    addresses: tuple[IPAddress, ...]

    @property
    def host_header(self) -> str:
        return self.url.netloc.decode("ascii")

    @property
    def server_name(self) -> str | None:
        """The name for SNI and certificate verification: the URL's host, unless it is an address literal."""
        host = self.url.raw_host.decode("ascii")
        return None if _literal(self.url.host) is not None else host

    def pinned_url(self, address: IPAddress) -> httpx.URL:
        return self.url.copy_with(host=str(address))


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if address in ipaddress.IPv6Network("64:ff9b::/96") or address in ipaddress.IPv6Network("::/96"):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def refusal(address: IPAddress) -> str | None:
    """Why a webhook must not be sent to this address, or None when it may."""
    if address.is_loopback or address.is_unspecified:  # ::1 and :: first: they are also in ::/96
        return f"{address}, {'a loopback' if address.is_loopback else 'the unspecified'} address"
    if isinstance(address, ipaddress.IPv6Address):
        for network, what in _WRAPPERS.items():
            if address in network:
                inner = _embedded_ipv4(address)
                if inner is None:
                    return f"{address}, {what}"
                return f"{address}, {what} carrying {inner}{'' if inner.is_global else ' (not public)'}"
    kinds = (
        (address.is_link_local, "a link-local address"),
        (address.is_multicast, "a multicast address"),
        (address.is_reserved, "a reserved address"),
        (isinstance(address, ipaddress.IPv6Address) and address.is_site_local, "a site-local address"),
        (address.is_private, "a private address"),
        (not address.is_global or any(address in n for n in _IPV4_REFUSED), "not a public address"),
    )
    for refused, what in kinds:
        if refused:
            return f"{address}, {what}"
    return None


def parse_target(url: str) -> httpx.URL:
    """The URL as httpx will send it; a 422 (field ``url``) for anything it cannot send: scheme, host, port."""
    try:
        parsed = httpx.URL(url)
        port = parsed.port
    except (httpx.InvalidURL, ValueError, UnicodeError) as exc:
        raise Invalid(f"the webhook URL cannot be read: {exc}", field="url") from exc
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise Invalid("the webhook URL must be http:// or https:// with a host", field="url")
    if parsed.userinfo:
        raise Invalid("the webhook URL must not carry credentials", field="url")
    if port is not None and not 0 < port < 65536:
        raise Invalid(f"the webhook URL's port must be 1 to 65535, not {port}", field="url")
    return parsed


def check_target(url: str, *, allow_private: bool, resolve: bool = True) -> Target:
    """Parse and resolve once; every address must be public (unless ``allow_private``). ``resolve=False`` (a
    registration with private targets allowed) skips the lookup: the name may only resolve on the CI network."""
    parsed = parse_target(url)
    if allow_private and not resolve:
        return Target(parsed, ())
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        infos = socket.getaddrinfo(parsed.host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise Invalid(f"the webhook host does not resolve: {exc}", field="url") from exc
    addresses: list[IPAddress] = []
    for info in infos:
        address = ipaddress.ip_address(info[4][0])
        why = None if allow_private else refusal(address)
        if why is not None:
            raise Invalid(f"the webhook host resolves to {why} {_ALLOW_HINT}", field="url")
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise Invalid("the webhook host resolves to no address", field="url")
    return Target(parsed, tuple(addresses))


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None
