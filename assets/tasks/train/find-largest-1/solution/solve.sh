#!/bin/bash
set -e
find /app/data -type f -printf '%s %p\n' | sort -n | tail -1 | cut -d' ' -f2 > /app/largest.txt
