"""Checks of what a buyer types that the sale and the mail both rely on."""

import unicodedata

# Characters no name or address needs, some of which disguise what is shown (the right-to-left
# override): controls (Cc), invisible formatting (Cf), line and paragraph separators (Zl, Zp).
INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})


def has_invisible_characters(text: str, allowed: frozenset[str] = frozenset()) -> bool:
    return any(unicodedata.category(ch) in INVISIBLE_CATEGORIES and ch not in allowed for ch in text)


def address_problem(email: str) -> str:
    """Why no mail can ever be sent to this address ("" when it can): it has invisible characters,
    a non-ASCII part before the @ (the mail backend cannot encode it), or a domain with no IDNA
    (DNS) form, which the mail backend needs. Checkout refuses such addresses; an order stored
    with one fails at once for good."""
    if has_invisible_characters(email):
        return "the address has control or formatting characters"
    local, _, domain = email.rpartition("@")
    if not local.isascii():
        return "the part before @ is not ASCII"
    try:
        domain.encode("idna")
    except UnicodeError as exc:
        return f"the domain has no DNS form ({exc})"
    return ""
