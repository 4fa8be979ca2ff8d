#!/bin/bash
# Runs as root in the sandbox before the agent starts.
set -e
mkdir -p /app
cat > /app/lumen.log <<'DATA'
cobalt 667
tundra 974
zephyr 608
birch 583
xenon 720
DATA
