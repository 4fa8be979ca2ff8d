#!/bin/bash
set -e
find /app/assets -type f -printf '%s %p\n' | sort -n | tail -1 | cut -d' ' -f2 > /app/biggest.txt
