#!/bin/bash
# Runs as root in the sandbox before the agent starts.
set -e
mkdir -p /app/data/indigo
mkdir -p /app/data/lumen
mkdir -p /app/data/umber
head -c 2905 /dev/zero > /app/data/indigo/umber.bin
head -c 4836 /dev/zero > /app/data/indigo/ember.bin
head -c 4713 /dev/zero > /app/data/indigo/maple.bin
head -c 397 /dev/zero > /app/data/umber/harbor.bin
head -c 368 /dev/zero > /app/data/umber/cobalt.bin
head -c 527 /dev/zero > /app/data/umber/pepper.bin
head -c 1661 /dev/zero > /app/data/lumen/xenon.bin
head -c 819 /dev/zero > /app/data/lumen/pepper.bin
head -c 4366 /dev/zero > /app/data/lumen/raven.bin
