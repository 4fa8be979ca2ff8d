#!/bin/bash
# Runs as root in the sandbox before the agent starts.
set -e
mkdir -p /app
cat > /app/umber.cfg <<'DATA'
cobalt 288
willow 663
juniper 145
tundra 692
xenon 454
DATA
