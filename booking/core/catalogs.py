"""The translation catalogs: ``locale/<lang>/LC_MESSAGES/django.po`` (and ``djangojs.po``) are the
source, kept in git; the ``.mo`` files Django reads are compiled from them, not committed.

Compiling uses Babel (pure Python, already a dependency for money and dates), so neither a
developer, the container build nor CI needs GNU gettext's ``msgfmt`` to run the site; only
``makemessages`` (extracting new strings, and the catalog completeness test) needs ``xgettext``.
Called by ``manage.py compile_catalogs`` (scripts/run.sh, the Dockerfile) and by the test
harness before the tests start (conftest.py).
"""

import os
import tempfile
from pathlib import Path

from babel.messages import mofile, pofile


def compile_catalogs(locale_dir: Path, force: bool = False) -> list[Path]:
    """Compile every ``.po`` under ``locale_dir`` whose ``.mo`` is missing or older; return the
    ``.mo`` files written. Fuzzy entries are left out, as msgfmt does. Each file is written to a
    temporary name and renamed, so a process reading the catalog never sees half of one (parallel
    test workers compile at the same time)."""
    written = []
    for po_path in sorted(Path(locale_dir).glob("*/LC_MESSAGES/*.po")):
        mo_path = po_path.with_suffix(".mo")
        if not force and mo_path.exists() and mo_path.stat().st_mtime >= po_path.stat().st_mtime:
            continue
        with po_path.open("rb") as po_file:
            catalog = pofile.read_po(po_file, locale=po_path.parent.parent.name)
        fd, temp_name = tempfile.mkstemp(dir=po_path.parent, suffix=".mo.tmp")
        with os.fdopen(fd, "wb") as mo_file:
            mofile.write_mo(mo_file, catalog, use_fuzzy=False)
        os.replace(temp_name, mo_path)
        written.append(mo_path)
    return written
