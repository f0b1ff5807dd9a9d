# Shared by run.sh and test.sh: a Python >= 3.12 venv with the pinned requirements (requirements-dev.txt:
# production's requirements.txt plus the development and test tools).
# Django 6 needs Python 3.12+; Debian 12's python3 is 3.11, so look for a newer one.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd)

find_python() {
  local candidate
  for candidate in "${PYTHON:-}" python3.13 python3.12 python3; do
    [ -n "$candidate" ] || continue
    if command -v "$candidate" >/dev/null 2>&1 &&
      "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
      command -v "$candidate"; return 0
    fi
  done
  for candidate in "$HOME"/.pyenv/versions/3.1[2-9]*/bin/python3 /usr/local/bin/python3.1[2-9]; do
    if [ -x "$candidate" ]; then echo "$candidate"; return 0; fi
  done
  return 1
}

ensure_venv() {
  if [ ! -x .venv/bin/python ] || ! .venv/bin/python -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
    local py
    py=$(find_python) || { echo "Python 3.12 or newer is needed (Django 6). Set PYTHON=/path/to/python3.12." >&2; exit 1; }
    echo "Creating .venv with $py"
    rm -rf .venv
    "$py" -m venv .venv
  fi
  # requirements-dev.txt includes requirements.txt, and requirements.lock pins what production's set
  # resolves to: the stamp is all three, so a change to any installs again.
  local wanted
  wanted=$(cat requirements.txt requirements.lock requirements-dev.txt)
  if [ ! -f .venv/.requirements-dev.stamp ] || [ "$wanted" != "$(cat .venv/.requirements-dev.stamp)" ]; then
    echo "Installing requirements-dev.txt (production's set as locked in requirements.lock) into .venv"
    install_requirements
    printf '%s\n' "$wanted" > .venv/.requirements-dev.stamp
  fi
}

# uv installs the set in seconds where pip takes about two minutes; pip stays the fallback when uv
# cannot be had from the package index.
install_requirements() {
  local uv_pin
  uv_pin=$(grep -E '^uv==' requirements-dev.txt)
  if .venv/bin/python -m pip install --quiet "$uv_pin" 2>/dev/null; then
    .venv/bin/uv pip install --python .venv/bin/python --quiet -r requirements-dev.txt -c requirements.lock
  else
    echo "uv is not available; installing with pip"
    .venv/bin/python -m pip install --quiet --upgrade pip
    .venv/bin/python -m pip install --quiet -r requirements-dev.txt -c requirements.lock
  fi
}

# Install a Debian package when a command is missing (only possible as root).
ensure_debian_package() {
  local command_name=$1 package=$2
  command -v "$command_name" >/dev/null 2>&1 && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "Installing Debian package $package"
    if [ -z "${APT_UPDATED:-}" ]; then apt-get update -qq; APT_UPDATED=1; fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$package" >/dev/null
  else
    echo "'$command_name' is missing: install it with 'sudo apt-get install $package' and run again." >&2
    exit 1
  fi
}
