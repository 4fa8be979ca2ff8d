#!/bin/bash
# Runs as root in the sandbox before the agent starts.
set -e
mkdir -p /app
cat > /app/config.json <<'DATA'
{
  "server": {"host": "0.0.0.0", "port": 6734, "tls": false},
  "database": {"user": "yarrow", "pool": {"min": 1, "max": 12}},
  "deploy": {"replicas": 6, "region": "birch"}
}
DATA
