"""Which configuration names hold secrets, and how values are shown in messages without leaking them.

Contract: ``is_secret_name`` decides by the name alone (a property, an environment variable, a JSON path
such as ``database.password``), so it works for names signaller has never heard of, misspelt ones
included; ``MASK`` is what a secret is shown as everywhere. ``printable`` and ``clip`` make user text
safe to put on one log line. Nothing here imports the rest of the configuration package.
"""

from __future__ import annotations

import re

MASK = "********"
"""What every secret is shown as, in ``repr``/``str``, error messages and ``to_display_dict``."""

_FRAGMENTS = ("pass", "pwd", "pswd", "secret", "token", "credential", "jaas", "private", "apikey")
"""A name containing one of these (in any word) is secret: ``sslpassword``, ``clientSecret``."""

_NEAR_WORDS = {"password": 2, "passwd": 1, "passphrase": 2, "secret": 1, "token": 1, "credential": 1}
"""Secret words and how many typing mistakes (edits, swaps) a word may be away and still count."""

_KEY_FORMATS = frozenset({"pem", "der", "data", "value", "content", "contents", "b64", "base64", "text",
                          "string", "bytes", "material", "jwk"})
"""Words that may follow ``key`` in a secret's name: ``ssl.key.pem``, ``private.key.data``."""

_SECRET_TAILS = (("auth", "user", "info"), ("auth", "userinfo"), ("oauthbearer", "config"))
"""Word sequences naming secrets without a secret word: ``basic.auth.user.info`` (user:password)."""

_MAX_WORD = 64
_MAX_NAME = 256
"""A longer word or name is no property name: its value is masked rather than searched for misspellings."""

_WORDS = re.compile(r"[a-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def name_words(name: str) -> list[str]:
    """The lower-case words of ``name``: split at every non-alphanumeric character and camelCase hump."""
    return _WORDS.findall(_CAMEL.sub(" ", name).lower())


def is_secret_name(name: str) -> bool:
    """True if a property, environment variable or JSON path called ``name`` holds a secret.

    Debezium's masking rule (``Configuration.PASSWORD_PATTERN``) widened so that masking errs on the
    side of too much: any word containing ``pass``/``pwd``/``secret``/``token``/``credential``/``jaas``/
    ``private``; a word a couple of typing mistakes away from password, passwd, passphrase, secret,
    token or credential (``pasword``, ``passwrod``, ``secert``); a key (``ssl.keystore.key``,
    ``ssl.key.pem``, ``apiKey``, ``database.sslkey``) whose name ends in ``key`` or in ``key`` plus a
    format word; ``basic.auth.user.info`` and ``sasl.oauthbearer.config``.
    """
    if len(name) > _MAX_NAME:
        return True
    words = name_words(name)
    if any(len(word) > _MAX_WORD for word in words):
        return True
    if any(fragment in word for word in words for fragment in _FRAGMENTS):
        return True
    if any(_near(word, target, budget) for word in words for target, budget in _NEAR_WORDS.items()):
        return True
    return _names_a_key(words) or any(_ends_with(words, tail) for tail in _SECRET_TAILS)


def _names_a_key(words: list[str]) -> bool:
    """``...key`` as the last word, or followed only by format words (``ssl.key.pem``)."""
    for index in range(len(words) - 1, -1, -1):
        if words[index].endswith("key"):
            return True
        if words[index] not in _KEY_FORMATS:
            return False
    return False


def _ends_with(words: list[str], tail: tuple[str, ...]) -> bool:
    return tuple(words[-len(tail):]) == tail


def _near(word: str, target: str, budget: int) -> bool:
    """True if some part of ``word`` is at most ``budget`` edits (insert, delete, change, swap) from ``target``.

    An approximate substring match (Sellers' algorithm with adjacent swaps): ``sslpasword`` is near
    ``password``. Words shorter than four letters are never near anything (``pwd`` is a fragment).
    """
    if len(word) < 4 or len(word) + budget < len(target):
        return False
    width = len(word) + 1
    before: list[int] | None = None
    previous = [0] * width  # a match may start anywhere in ``word``
    for row in range(1, len(target) + 1):
        current = [row] + [0] * len(word)
        for col in range(1, width):
            cost = 0 if target[row - 1] == word[col - 1] else 1
            best = min(previous[col] + 1, current[col - 1] + 1, previous[col - 1] + cost)
            swapped = row > 1 and col > 1 and target[row - 1] == word[col - 2] and target[row - 2] == word[col - 1]
            if swapped and before is not None:
                best = min(best, before[col - 2] + 1)
            current[col] = best
        before, previous = previous, current
    return min(previous) <= budget


def printable(text: str) -> str:
    """``text`` with control characters, line breaks and lone surrogates escaped (``\\n``, ``\\udc80``).

    Names and origins go into messages unquoted; escaping keeps each message on one line, unforgeable
    and encodable as UTF-8 whatever bytes the user supplied.
    """
    if text.isprintable():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            pass
        else:
            return text
    return "".join(char if char.isprintable() and not 0xD800 <= ord(char) <= 0xDFFF
                   else repr(char)[1:-1] for char in text)


MAX_SHOWN = 200
"""Longest value text repeated in a message; longer values are cut, with their length given."""


def clip(text: str) -> str:
    """``text`` cut to ``MAX_SHOWN`` characters, saying how long it was."""
    if len(text) <= MAX_SHOWN:
        return text
    return f"{text[:MAX_SHOWN]}... ({len(text)} characters)"
