#!/usr/bin/env bash
# Regenerate src/schema.d.ts (or the file given) from the OpenAPI schema this checkout's
# manage.py describes, so the client's types follow the service's endpoints.
# Usage: scripts/generate.sh [OUTPUT]   (PYTHON picks the interpreter; the repo's .venv by default)
set -euo pipefail
package="$(cd "$(dirname "$0")/.." && pwd)"
repo="$(cd "$package/../.." && pwd)"
output="$(realpath -m "${1:-$package/src/schema.d.ts}")"
schema="$(mktemp --suffix=.json)"
trap 'rm -f "$schema"' EXIT
(cd "$repo" && SECRET_KEY=check "${PYTHON:-.venv/bin/python}" manage.py spectacular \
  --format openapi-json --file "$schema")
"$package/node_modules/.bin/openapi-typescript" "$schema" --output "$output" \
  --default-non-nullable false
