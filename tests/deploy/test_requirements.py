"""The lock of production's set must stay in step with requirements.txt: the image and both scripts
install requirements.txt constrained by requirements.lock, so a pin changed in one file alone would
install something else than what was tested, or fail to resolve."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PIN = re.compile(r"^([A-Za-z0-9_.\[\]-]+)==([^\s;#]+)")


def pins(path: Path) -> dict[str, str]:
    found = {}
    for line in path.read_text().splitlines():
        if match := PIN.match(line.strip()):
            name = re.sub(r"\[.*\]", "", match.group(1)).lower().replace("_", "-")
            found[name] = match.group(2)
    return found


def test_every_production_requirement_is_locked_at_its_pin():
    wanted, locked = pins(ROOT / "requirements.txt"), pins(ROOT / "requirements.lock")
    assert wanted, "requirements.txt pins nothing"
    mismatched = {name: (pin, locked.get(name)) for name, pin in wanted.items() if locked.get(name) != pin}
    assert not mismatched, f"run `make lock`: requirements.txt and requirements.lock differ on {mismatched}"


def test_development_tools_stay_out_of_the_production_lock():
    dev_only = set(pins(ROOT / "requirements-dev.txt")) - set(pins(ROOT / "requirements.txt"))
    assert {"pytest", "ruff", "uv"} <= dev_only
    assert not dev_only & set(pins(ROOT / "requirements.lock"))
