#!/usr/bin/env bash
# Install the system packages sitekeep needs, when missing (Debian/Ubuntu, as root or via sudo):
# Debian's Chromium and its chromedriver, Firefox ESR (browser=firefox), and Python's venv module.
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

missing=()
command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || missing+=(chromium)
[ -x /usr/bin/chromedriver ] || missing+=(chromium-driver)
[ -x /usr/bin/firefox-esr ] || missing+=(firefox-esr)
PY="${PYTHON:-python3}"
"$PY" -c 'import venv, ensurepip' >/dev/null 2>&1 || missing+=(python3-venv)

if [ ${#missing[@]} -gt 0 ]; then
  echo "installing system packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
