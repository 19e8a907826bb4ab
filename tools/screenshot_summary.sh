#!/usr/bin/env bash
# Screenshot a summary page with headless Chromium so a person can look at what a reader sees.
#
#   tools/screenshot_summary.sh [PAGE.html] [OUT.png] [WIDTHxHEIGHT]
#
# Defaults: results/index.html -> /tmp/paperzoo-summary.png at 1400x2400. Needs Debian's
# `chromium` (apt-get install -y chromium); no network is used (every fetch flag is off and the
# page links only local files).
set -euo pipefail
page=${1:-results/index.html}
out=${2:-/tmp/paperzoo-summary.png}
size=${3:-1400x2400}
[[ -f $page ]] || { echo "screenshot_summary: $page not found (run tools/update_summary.py)" >&2; exit 2; }
browser=$(command -v chromium || command -v chromium-browser || true)
[[ -n $browser ]] || { echo "screenshot_summary: chromium not installed (apt-get install -y chromium)" >&2; exit 2; }
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
"$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --hide-scrollbars --user-data-dir="$profile" --screenshot="$(realpath -m "$out")" \
  --window-size="${size/x/,}" "file://$(realpath "$page")" >/dev/null 2>&1
[[ -s $out ]] || { echo "screenshot_summary: chromium wrote no $out" >&2; exit 1; }
echo "wrote $out ($size)"
