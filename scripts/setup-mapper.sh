#!/usr/bin/env bash
# Install the npm packages of the opt-in Chromium engine SITEKEEP_CHROMIUM_BIDI=mapper
# (src/sitekeep/browser/mapper_node: chromium-bidi pinned in its package.json and lock file).
# Needs Node.js >= 20.19 and npm; without them it says so and skips (the default engine,
# chromedriver, needs neither). Run by `make setup`; sitekeep never installs them at run time.
set -euo pipefail

DIR="$(cd "$(dirname "$0")/.." && pwd)/src/sitekeep/browser/mapper_node"
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "setup-mapper: no node/npm: SITEKEEP_CHROMIUM_BIDI=mapper will not be available" >&2
  exit 0
fi
cd "$DIR"
npm ci --omit=dev --no-audit --no-fund --loglevel=error
