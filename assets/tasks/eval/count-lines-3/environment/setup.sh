#!/bin/bash
# Runs as root in the sandbox before the agent starts.
set -e
mkdir -p /app
cat > /app/quartz.log <<'DATA'
yarrow 657
sierra 117
indigo 907
juniper 613
DATA
