"""The German catalog is complete: every string the code marks for translation (templates, Python,
the site's scripts) has a German translation that is neither empty nor fuzzy, with the same
placeholders. English is the source language: the msgids are the English text, so English needs no
catalog of its own.

The strings are extracted the way a developer does it (``manage.py makemessages``, GNU gettext's
xgettext; CI installs Debian's gettext) into a scratch directory, so the repository's catalog is
only read. When this fails: ``manage.py makemessages -l de --no-location`` (and ``-d djangojs``,
same ignores as below), translate the new entries in ``locale/de/LC_MESSAGES/*.po``, run again."""

import shutil
from io import BytesIO
from pathlib import Path

import pytest
from babel.messages.pofile import read_po
from django.conf import settings
from django.core.management import call_command

REPO = Path(settings.BASE_DIR)
SOURCES = ["booking", "templates", "static", "theater_site"]  # what the site runs; not tests, tools or vendored code
IGNORE = ["booking/tests/*", "static/vendor/*", "*/migrations/*"]


def _keys(catalog) -> dict:
    return {
        (message.context, message.id if isinstance(message.id, str) else tuple(message.id)): message
        for message in catalog
        if message.id
    }


@pytest.fixture(scope="module")
def extracted(tmp_path_factory):
    """{domain: catalog} of the strings the code marks now, extracted from a scratch copy into its locale/."""
    if shutil.which("xgettext") is None:
        pytest.fail("xgettext is missing: apt-get install gettext (scripts/test.sh and .ci/run install it)")
    scratch = tmp_path_factory.mktemp("makemessages")
    for name in SOURCES:  # copies, not links: makemessages writes a "<template>.py" beside each template,
        # and two runs at once in one tree (xdist's workers) found and removed each other's (CommandError)
        shutil.copytree(REPO / name, scratch / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (scratch / "locale").mkdir()
    import os

    here = os.getcwd()
    os.chdir(scratch)  # makemessages walks the current directory
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(settings, "LOCALE_PATHS", [scratch / "locale"])
            for domain in ("django", "djangojs"):
                call_command(
                    "makemessages", locale=["de"], domain=domain, no_location=True,
                    ignore_patterns=IGNORE, verbosity=0,
                )  # fmt: skip
    finally:
        os.chdir(here)
    found = {}
    for domain in ("django", "djangojs"):
        po = scratch / "locale" / "de" / "LC_MESSAGES" / f"{domain}.po"
        found[domain] = read_po(BytesIO(po.read_bytes())) if po.exists() else None
    return found


@pytest.mark.slow
@pytest.mark.parametrize("domain", ["django", "djangojs"])
def test_every_marked_string_has_a_german_translation(extracted, domain):
    code = extracted[domain]
    assert code is not None and len(code) > 0, f"no {domain} strings were extracted"
    german = read_po(BytesIO((REPO / "locale" / "de" / "LC_MESSAGES" / f"{domain}.po").read_bytes()), locale="de")
    ours = _keys(german)
    missing = [key for key in _keys(code) if key not in ours]
    untranslated = [
        key
        for key, message in ours.items()
        if key in _keys(code)
        and (message.fuzzy or not (all(message.string) if isinstance(message.string, tuple) else message.string))
    ]
    stale = [key for key in ours if key not in _keys(code)]
    assert not missing, f"not in locale/de/LC_MESSAGES/{domain}.po (run makemessages): {missing}"
    assert not untranslated, f"empty or fuzzy German in {domain}.po: {untranslated}"
    assert not stale, f"in {domain}.po but no longer in the code (run makemessages): {stale}"
    # Babel's checks: the translation uses the same python-format placeholders as the English
    problems = [(message.id, [str(e) for e in errors]) for message, errors in german.check() if errors]
    assert not problems, problems


def test_english_is_the_source_language_and_german_the_other():
    assert settings.LANGUAGE_CODE == "en"
    assert [code for code, _name in settings.LANGUAGES] == ["en", "de"]
    assert not (REPO / "locale" / "en").exists()  # the msgids are the English text


@pytest.mark.parametrize("domain", ["django", "djangojs"])
def test_no_message_is_defined_twice(domain):
    """GNU gettext's msgfmt refuses a catalog with a msgid twice (Babel keeps the last silently):
    two branches that both append one leave it so."""
    text = (REPO / "locale" / "de" / "LC_MESSAGES" / f"{domain}.po").read_text(encoding="utf-8")
    seen: set[tuple[str, str]] = set()
    twice = []
    for entry in text.split("\n\n"):
        lines = [line for line in entry.splitlines() if not line.startswith("#")]
        context = "\n".join(line for line in lines if line.startswith("msgctxt"))
        start = next((i for i, line in enumerate(lines) if line.startswith("msgid ")), None)
        if start is None:
            continue
        end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith('"')), len(lines))
        key = (context, "\n".join(lines[start:end]))
        if key[1] != 'msgid ""' or context:
            if key in seen:
                twice.append(key[1])
            seen.add(key)
    assert not twice, twice
