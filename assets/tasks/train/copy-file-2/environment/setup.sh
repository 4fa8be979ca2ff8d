#!/bin/bash
# Runs as root in the sandbox before the agent starts.
set -e
mkdir -p /app
cat > /app/juniper.cfg <<'DATA'
ember 361
zephyr 249
juniper 367
violet 933
kelp 488
juniper 973
DATA
