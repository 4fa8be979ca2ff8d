#!/bin/bash
# Runs as root in the sandbox before the agent starts.
set -e
mkdir -p /app/data/kelp
mkdir -p /app/data/lumen
mkdir -p /app/data/tundra
head -c 3650 /dev/zero > /app/data/lumen/birch.bin
head -c 3878 /dev/zero > /app/data/lumen/raven.bin
head -c 1514 /dev/zero > /app/data/lumen/ember.bin
head -c 3609 /dev/zero > /app/data/kelp/onyx.bin
head -c 677 /dev/zero > /app/data/kelp/lumen.bin
head -c 631 /dev/zero > /app/data/kelp/pepper.bin
head -c 1789 /dev/zero > /app/data/tundra/fjord.bin
head -c 1711 /dev/zero > /app/data/tundra/raven.bin
head -c 2673 /dev/zero > /app/data/tundra/cobalt.bin
