#!/bin/bash
# Runs as root in the sandbox before the agent starts.
set -e
mkdir -p /app
cat > /app/config.json <<'DATA'
{
  "server": {"host": "0.0.0.0", "port": 4918, "tls": false},
  "database": {"user": "cobalt", "pool": {"min": 1, "max": 6}},
  "deploy": {"replicas": 3, "region": "nectar"}
}
DATA
