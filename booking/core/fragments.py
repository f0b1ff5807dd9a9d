"""The template fragment cache: ``{% cache <seconds> <name> <values...> using="fragments" %}``.

The hot templates (what's on) keep the parts that cost the most to render and repeat across
requests, keyed on the values each part is built from, as pretix does: a show's card on the card
itself, the what's on list on its days. (The seat click's answer is built in Python instead,
``booking/web/cart_panel_html.py``.) A changed value is a new key, so nothing is ever invalidated; old entries age out
(``TIMEOUT``, ``MAX_ENTRIES`` in ``settings.CACHES["fragments"]``).

The cache is Django's in-process LocMemCache: a lookup costs a few microseconds, where Redis would
cost a network round trip per fragment. Every key also names the active language and time zone,
which the templates' date filters read, so a fragment is never shown in another of either.
"""

from django.utils import timezone, translation


def make_key(key: str, key_prefix: str, version: int) -> str:
    """The cache's ``KEY_FUNCTION``: Django's key plus the language and time zone."""
    return f"{key_prefix}:{version}:{translation.get_language()}:{timezone.get_current_timezone_name()}:{key}"
