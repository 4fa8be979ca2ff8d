#!/bin/bash
set -e
find /app/cache -type f -printf '%s %p\n' | sort -n | tail -1 | cut -d' ' -f2 > /app/max_file.txt
