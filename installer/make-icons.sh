#!/usr/bin/env bash
# Makes the application icon's PNG sizes (resources/icons/hicolor/NxN/apps) from its SVG with rsvg-convert
# (Debian librsvg2-bin). Run by hand after changing the SVG and commit the PNGs: the build does not need the tool.
set -euo pipefail
icons="$(cd "$(dirname "$0")/../resources/icons/hicolor" && pwd)"
svg="$icons/scalable/apps/io.traindeck.TrainDeck.svg"
for size in 16 22 24 32 48 64 128 256; do
  mkdir -p "$icons/${size}x${size}/apps"
  rsvg-convert -w "$size" -h "$size" "$svg" -o "$icons/${size}x${size}/apps/io.traindeck.TrainDeck.png"
done
