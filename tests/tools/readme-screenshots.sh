#!/usr/bin/env bash
# Makes README.md's main-window screenshots from the real console under Xvfb, as a new user first sees it: a fresh
# catalog and settings (this machine's prices set, as a user would set them), the Fashion-MNIST demo job it starts on
# a first start, watched live and when done, in the light and the dark appearance. Not a test (the moments are taken
# by the clock, a few seconds apart); look at each image before committing it.
#
#   bash tests/tools/readme-screenshots.sh [BUILD_DIR]      (default: build)
#
# Writes resources/screenshots/job-live.png (light, running), crosshair.png (light, running, the mouse over the loss
# curve), settings.png (the dialog, light), menu-bar.png (the Jobs menu open,
# light), dataset-preview.png (the Datasets tab on Fashion-MNIST, light), main-window.png (light, finished) and
# main-window-dark.png (dark, running). Needs xvfb-run, xdotool and ImageMagick's import and convert.
set -euo pipefail
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$source_dir/build}" && pwd)
shots=$source_dir/resources/screenshots
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# $1: light or dark. Leaves $work/$1-live.png (about 5 s after start: the demo mid-run) and $1-done.png.
take() {
    # A home of its own (the data folder is ~/.local/share/traindeck there, as for a user), with the prices of a
    # workstation set in Settings.
    home=$work/home/ada
    rm -rf "$work/home"
    mkdir -p "$home/.config/traindeck" "$work/home/run"
    chmod 700 "$work/home/run"
    printf '[appearance]\ntheme=%s\n[local]\nprice_base=0.35\nprice_gpu=0\nprice_cpu=0.02\n' "$1" \
        > "$home/.config/traindeck/traindeck.conf"
    cat > "$work/take.sh" <<SCRIPT
export HOME=$home XDG_RUNTIME_DIR=$work/home/run
unset XDG_DATA_HOME XDG_CONFIG_HOME
"$build/app/traindeck" > "$work/$1.log" 2>&1 &
app=\$!
sleep 5
import -window root "$work/$1-live.png"
# Settings (Ctrl+,): the dialog's own window.
xdotool mousemove 300 400 click 1 key ctrl+comma
sleep 1.5
settings=\$(xdotool search --name '^Settings\$' | head -n 1)
[ -n "\$settings" ] && import -window "\$settings" "$work/$1-settings.png"
xdotool key Escape
xdotool mousemove 1399 899
# The crosshair over the live loss curve (the middle of its plot), then the mouse out of the window again.
sleep 1
xdotool mousemove 900 330
sleep 1.5
import -window root "$work/$1-crosshair.png"
xdotool mousemove 1399 899
sleep 14
import -window root "$work/$1-done.png"
# The Jobs menu, opened by a click on its title.
xdotool mousemove 137 8 click 1
sleep 1
import -window root "$work/$1-menu.png"
xdotool key Escape
# The Datasets tab (Ctrl+3) on the Fashion-MNIST version a first start registers: its first row clicked.
xdotool key ctrl+3
sleep 1
xdotool mousemove 200 157 click 1
sleep 4
import -window root "$work/$1-datasets.png"
kill \$app
wait \$app || true
# The local worker outlives the console (by design): it goes too, and its jobs with its session.
worker=\$(cat "$home/.local/share/traindeck/worker/pid" 2>/dev/null || true)
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
crop light-menu.png menu-bar.png
crop light-datasets.png dataset-preview.png
crop dark-live.png main-window-dark.png
echo "readme-screenshots: wrote job-live.png, crosshair.png, settings.png, menu-bar.png, dataset-preview.png," \
     "main-window.png and main-window-dark.png in $shots: look at them"
