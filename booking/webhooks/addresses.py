"""Which URLs a delivery may go to: https to a public host. A staff member could otherwise make
the worker call into the theater's own network (server-side request forgery), so a host that is
or resolves to a loopback, private, link-local or reserved address is refused, when the endpoint
is saved and again before each delivery (the name may resolve elsewhere by then).

``settings.BOOKING_WEBHOOK_ALLOW_LOCAL`` (on with DEBUG, and in the tests that start a receiver
on 127.0.0.1) allows plain http and local hosts.
"""

import ipaddress
import socket
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.utils.translation import gettext

from booking.core.errors import InvalidRequest
from booking.core.text_checks import has_invisible_characters

MAX_URL_LENGTH = 2000

# host, port -> the addresses the name has (socket.getaddrinfo's answer, addresses only)
Resolver = Callable[[str, int], list[str]]


def resolve_host(host: str, port: int) -> list[str]:
    return list(dict.fromkeys(str(info[4][0]) for info in socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)))


@dataclass(frozen=True)
class Target:
    """Where one delivery goes: the checked address to connect to, and the names the request and
    the TLS certificate check still use."""

    scheme: str
    host: str
    port: int
    address: str
    path: str


def _refuse(message: str) -> InvalidRequest:
    return InvalidRequest(message, fields={"url": message})


def clean_url(url: str, *, allow_local: bool) -> str:
    """The URL as stored, or InvalidRequest (field ``url``) saying what is wrong with it."""
    url = (url or "").strip()
    if not url:
        raise _refuse(gettext("Enter the URL the events are sent to."))
    if len(url) > MAX_URL_LENGTH:
        raise _refuse(gettext("The URL is longer than %(max)d characters.") % {"max": MAX_URL_LENGTH})
    if has_invisible_characters(url) or any(c.isspace() for c in url):
        raise _refuse(gettext("The URL contains spaces or invisible characters."))
    parts = urlsplit(url)
    schemes = ("https", "http") if allow_local else ("https",)
    if parts.scheme.lower() not in schemes:
        raise _refuse(gettext("The URL must start with https://."))
    if parts.username is not None or parts.password is not None:
        raise _refuse(gettext("The URL must not contain a user name or password."))
    if not parts.hostname:
        raise _refuse(gettext("The URL has no host name."))
    try:
        port = parts.port
    except ValueError:
        raise _refuse(gettext("The URL's port is not a number from 1 to 65535.")) from None
    if parts.fragment:
        raise _refuse(gettext("The URL must not contain a fragment (#...)."))
    check_host(parts.hostname, port, allow_local=allow_local)
    return url


def public_address(host: str, port: int, *, allow_local: bool, resolve: Resolver = resolve_host) -> str:
    """The address to connect to, or InvalidRequest unless every address the host has is a public one."""
    try:
        addresses = resolve(host, port)
    except (OSError, UnicodeError):
        addresses = []
    if not addresses:
        raise _refuse(gettext("The host name %(host)s could not be resolved.") % {"host": host})
    if not allow_local:
        for address in addresses:
            ip = ipaddress.ip_address(address.split("%", 1)[0])
            if not ip.is_global or ip.is_multicast:
                raise _refuse(
                    gettext("The host %(host)s is a local or private address; events go to public hosts only.")
                    % {"host": host}
                )
    return addresses[0]


def check_host(host: str, port: int | None, *, allow_local: bool) -> None:
    """InvalidRequest unless every address the host has is a public one."""
    if not allow_local:
        public_address(host, port or 443, allow_local=False)


def delivery_target(url: str, *, allow_local: bool, resolve: Resolver = resolve_host) -> Target:
    """Before a delivery: the stored URL's host resolved once and checked again; the delivery
    connects to the address returned, not to a second lookup of the name."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    port = parts.port or (443 if scheme == "https" else 80)
    host = parts.hostname or ""
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    address = public_address(host, port, allow_local=allow_local, resolve=resolve)
    return Target(scheme=scheme, host=host, port=port, address=address, path=path)
