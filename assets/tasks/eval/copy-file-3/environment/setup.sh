#!/bin/bash
# Runs as root in the sandbox before the agent starts.
set -e
mkdir -p /app
cat > /app/garnet.cfg <<'DATA'
maple 4
birch 768
maple 755
sierra 466
xenon 51
yarrow 4
fjord 333
amber 609
DATA
