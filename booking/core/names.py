"""Names as the staff search finds them: lower case, accents and compatibility forms folded,
spaces collapsed. An order stores ``nameKeys``, the folded name from the start of each of its
words ("ada lovelace", "lovelace"), so an anchored prefix on the nameKeys index finds a name by the
start of any word, without reading every order."""

import unicodedata


def name_key(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", str(text or ""))
    bare = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(bare.casefold().split())


def name_keys(name: str) -> list[str]:
    """The folded name from each word on (at most 8: a name is at most 100 characters)."""
    words = name_key(name).split(" ")
    return [" ".join(words[i:]) for i in range(min(len(words), 8)) if words[i]]
