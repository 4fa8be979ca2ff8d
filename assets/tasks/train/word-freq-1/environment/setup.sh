#!/bin/bash
# Runs as root in the sandbox before the agent starts.
set -e
mkdir -p /app
echo 'the quick brown fox jumps over the lazy dog the end' > /app/example.txt
