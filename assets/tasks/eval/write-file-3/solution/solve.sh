#!/bin/bash
set -e
printf '%s\n' 'cobalt cobalt 56' > /app/birch_2.txt
