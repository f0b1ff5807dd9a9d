"""JSON that staff and door phones send us, read into text Python can store and show.

JSON may escape a lone UTF-16 surrogate ("\\ud800"), and ``json.loads`` also reads the bytes UTF-8
would give one; both are valid JSON but not text: MongoDB, the templates and every encoder refuse
it later (a 500 far from where it came in). ``loads`` refuses it where the JSON is read.
"""

import json
import re
from collections.abc import Callable
from typing import Any

LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # a paired one is read as the one character it encodes


class NotText(ValueError):
    """The JSON holds a string (or key) that is not text."""


def loads(raw: bytes | str, *, parse_constant: Callable[[str], Any] | None = None) -> Any:
    """``json.loads``, refusing a lone surrogate anywhere in the document (NotText); any other
    mistake raises what ``json.loads`` raises."""
    document = json.loads(raw, parse_constant=parse_constant)
    stack = [document]
    while stack:  # iteratively: a deeply nested document is safe to walk
        item = stack.pop()
        if isinstance(item, str):
            if LONE_SURROGATE.search(item):
                raise NotText("a lone surrogate")
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return document
