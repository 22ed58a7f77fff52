#!/usr/bin/env bash
# Makes README.md's main-window screenshots from the real console under Xvfb, as a new user first sees it: a fresh
# catalog and settings, the Fashion-MNIST demo job it starts on a first start, watched live and when done, in the
# light and the dark appearance. Not a test (the moments are taken by the clock, a few seconds apart); look at each
# image before committing it.
#
#   bash tests/tools/readme-screenshots.sh [BUILD_DIR]      (default: build)
#
# Writes resources/screenshots/job-live.png (light, running), crosshair.png (light, running, the mouse over the loss
# curve), settings.png (the dialog, light), main-window.png (light, finished) and main-window-dark.png (dark,
# running). Needs xvfb-run, xdotool and ImageMagick's import and convert.
set -euo pipefail
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$source_dir/build}" && pwd)
shots=$source_dir/resources/screenshots
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# $1: light or dark. Leaves $work/$1-live.png (about 5 s after start: the demo mid-run) and $1-done.png.
take() {
    rm -rf "$work/home"
    mkdir -p "$work/home/config/traindeck" "$work/home/run"
    chmod 700 "$work/home/run"
    printf '[appearance]\ntheme=%s\n' "$1" > "$work/home/config/traindeck/traindeck.conf"
    cat > "$work/take.sh" <<SCRIPT
export XDG_DATA_HOME=$work/home/data XDG_CONFIG_HOME=$work/home/config XDG_RUNTIME_DIR=$work/home/run
"$build/app/traindeck" > "$work/$1.log" 2>&1 &
app=\$!
sleep 5
import -window root "$work/$1-live.png"
# The crosshair over the live loss curve (the middle of its plot), then the mouse out of the window again.
xdotool mousemove 1000 330
sleep 1.5
import -window root "$work/$1-crosshair.png"
xdotool mousemove 1399 899
# Settings (Ctrl+,): the dialog's own window.
xdotool mousemove 300 400 click 1 key ctrl+comma
sleep 1.5
settings=\$(xdotool search --name '^Settings\$' | head -n 1)
[ -n "\$settings" ] && import -window "\$settings" "$work/$1-settings.png"
xdotool key Escape
xdotool mousemove 1399 899
sleep 21
import -window root "$work/$1-done.png"
kill \$app
wait \$app || true
# The local worker outlives the console (by design): it goes too, and its jobs with its session.
worker=\$(cat "$work/home/data/traindeck/worker/pid" 2>/dev/null || true)
if [ -n "\$worker" ]; then kill -- -"\$worker" 2>/dev/null || kill "\$worker" 2>/dev/null || true; fi
SCRIPT
    xvfb-run -a -s "-screen 0 1400x900x24" bash "$work/take.sh"
}

take light
take dark
# The window is 1400 × 864 at the top left of the screen: the rest is the screen's black.
crop() { convert "$work/$1" -crop 1400x864+0+0 +repage "$shots/$2"; }
crop light-live.png job-live.png
crop light-done.png main-window.png
crop light-crosshair.png crosshair.png
cp "$work/light-settings.png" "$shots/settings.png"
crop dark-live.png main-window-dark.png
echo "readme-screenshots: wrote job-live.png, crosshair.png, settings.png, main-window.png and main-window-dark.png in $shots: look at them"
