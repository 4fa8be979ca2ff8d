#!/bin/bash
# Runs as root in the sandbox before the agent starts.
set -e
mkdir -p /app/assets/birch
mkdir -p /app/assets/indigo
mkdir -p /app/assets/juniper
head -c 4763 /dev/zero > /app/assets/birch/cobalt.bin
head -c 4302 /dev/zero > /app/assets/birch/sierra.bin
head -c 543 /dev/zero > /app/assets/birch/indigo.bin
head -c 4508 /dev/zero > /app/assets/juniper/willow.bin
head -c 3002 /dev/zero > /app/assets/juniper/violet.bin
head -c 2485 /dev/zero > /app/assets/juniper/indigo.bin
head -c 4523 /dev/zero > /app/assets/indigo/sierra.bin
head -c 3738 /dev/zero > /app/assets/indigo/quartz.bin
head -c 1904 /dev/zero > /app/assets/indigo/cobalt.bin
