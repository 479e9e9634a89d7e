#!/usr/bin/env bash
# Refresh the htmx file the admin UI ships (src/sitekeep/api/ui/static/), from the npm registry.
# The file is committed: nothing is fetched at run time, and tests check its sha256
# against ui/static/VENDORED. Usage: scripts/vendor-htmx.sh [version]   (default 2.0.11)
set -euo pipefail
version="${1:-2.0.11}"
static="$(cd "$(dirname "$0")/.." && pwd)/src/sitekeep/api/ui/static"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "htmx.org@${version}" >/dev/null && tar xzf htmx.org-*.tgz)
cp "$work/package/dist/htmx.min.js" "$static/htmx.min.js"
cp "$work/package/LICENSE" "$static/htmx.LICENSE"
sum="$(sha256sum "$static/htmx.min.js" | cut -d' ' -f1)"
printf 'htmx.org %s (npm), dist/htmx.min.js, Zero-Clause BSD (htmx.LICENSE)\nsha256 %s\n' \
    "$version" "$sum" > "$static/VENDORED"
cat "$static/VENDORED"
