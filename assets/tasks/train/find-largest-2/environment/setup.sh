#!/bin/bash
# Runs as root in the sandbox before the agent starts.
set -e
mkdir -p /app/data/birch
mkdir -p /app/data/indigo
mkdir -p /app/data/juniper
head -c 4763 /dev/zero > /app/data/birch/cobalt.bin
head -c 4302 /dev/zero > /app/data/birch/sierra.bin
head -c 543 /dev/zero > /app/data/birch/indigo.bin
head -c 4508 /dev/zero > /app/data/juniper/willow.bin
head -c 3002 /dev/zero > /app/data/juniper/violet.bin
head -c 2485 /dev/zero > /app/data/juniper/indigo.bin
head -c 4523 /dev/zero > /app/data/indigo/sierra.bin
head -c 3738 /dev/zero > /app/data/indigo/quartz.bin
head -c 1904 /dev/zero > /app/data/indigo/cobalt.bin
