# Sourced by scripts/serve and scripts/test: make .venv with a Python 3.11+ and install the
# given requirements file, skipping pip when nothing changed since the last install.
set -euo pipefail
requirements_file="$1"
python_bin="${PYTHON:-python3}"
if ! "$python_bin" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "Python 3.11 or newer is needed (set PYTHON=/path/to/python3.11)." >&2
  exit 1
fi
if [ ! -x .venv/bin/python ]; then
  "$python_bin" -m venv .venv
fi
stamp=".venv/.installed-$(basename "$requirements_file")"
# The Python client, which the dev requirements install, counts too (when it is there: a copy
# of the scripts and requirements alone serves without it).
digest=$(cat requirements*.txt $(ls clients/python/pyproject.toml 2>/dev/null) | sha256sum |
  cut -d' ' -f1)
# requirements-dev.txt includes requirements.txt: scripts/serve after scripts/test (as the
# slow-client test runs it) has nothing to install.
if [ "$requirements_file" = requirements.txt ] &&
  [ "$(cat .venv/.installed-requirements-dev.txt 2>/dev/null)" = "$digest" ]; then
  stamp=".venv/.installed-requirements-dev.txt"
fi
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$digest" ]; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
  # --no-compile: pip would byte-compile every installed module (~70 s of CPU, torch's most of
  # it); Python compiles the ones a process imports, once, on first import instead.
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-compile \
    -r "$requirements_file"
  echo "$digest" > "$stamp"
fi
