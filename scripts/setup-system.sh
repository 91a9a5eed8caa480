#!/usr/bin/env bash
# System packages csikit needs beyond npm's (`npm run setup`, run by .ci/run before the tests):
# bubblewrap, the sandbox the virtual node runs pods' containers in (src/node/runtime), and
# util-linux's nsenter, which `kubectl exec` uses to enter a running container, and Debian's
# chromium, which the dashboard's browser tests drive through playwright-core (never a browser
# download; without it those tests skip saying why). Idempotent:
# installs only what is missing, and only as root on a Debian-like system; otherwise it says
# what is missing and leaves it (pods with a command then fail with an event saying why).
set -euo pipefail
missing=()
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
command -v nsenter >/dev/null 2>&1 || missing+=(util-linux)
[ -x /usr/bin/chromium ] || missing+=(chromium)
if [ "${#missing[@]}" -eq 0 ]; then
  echo "setup-system: bubblewrap, nsenter and chromium present"
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "setup-system: missing ${missing[*]} (install as root: apt-get install -y ${missing[*]}); pods' commands (bubblewrap, util-linux) or the dashboard's browser tests (chromium) will not run without them" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends "${missing[@]}" || {
  apt-get update
  apt-get install -y --no-install-recommends "${missing[@]}"
}
echo "setup-system: installed ${missing[*]}"
