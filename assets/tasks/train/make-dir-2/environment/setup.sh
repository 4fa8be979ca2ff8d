#!/bin/bash
# Runs as root in the sandbox before the agent starts.
set -e
mkdir -p /app
