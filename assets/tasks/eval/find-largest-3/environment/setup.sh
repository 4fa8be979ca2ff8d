#!/bin/bash
# Runs as root in the sandbox before the agent starts.
set -e
mkdir -p /app/cache/indigo
mkdir -p /app/cache/lumen
mkdir -p /app/cache/umber
head -c 2905 /dev/zero > /app/cache/indigo/umber.bin
head -c 4836 /dev/zero > /app/cache/indigo/ember.bin
head -c 4713 /dev/zero > /app/cache/indigo/maple.bin
head -c 397 /dev/zero > /app/cache/umber/harbor.bin
head -c 368 /dev/zero > /app/cache/umber/cobalt.bin
head -c 527 /dev/zero > /app/cache/umber/pepper.bin
head -c 1661 /dev/zero > /app/cache/lumen/xenon.bin
head -c 819 /dev/zero > /app/cache/lumen/pepper.bin
head -c 4366 /dev/zero > /app/cache/lumen/raven.bin
