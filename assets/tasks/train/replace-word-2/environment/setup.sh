#!/bin/bash
# Runs as root in the sandbox before the agent starts.
set -e
mkdir -p /app
cat > /app/notes.txt <<'DATA'
sierra zephyr fjord amber
willow raven willow pepper
fjord lumen lumen kelp garnet
umber zephyr quartz sierra
ember nectar amber kelp tundra
onyx violet pepper indigo kelp
yarrow birch birch fjord
sierra lumen tundra kelp birch
violet kelp birch violet pepper
pepper tundra quartz kelp fjord
zephyr nectar lumen kelp garnet
umber nectar amber fjord
juniper willow onyx willow
sierra willow kelp willow onyx
cobalt violet lumen raven
tundra zephyr juniper indigo
kelp zephyr harbor harbor pepper
raven cobalt quartz kelp birch
quartz quartz onyx juniper
cobalt lumen lumen kelp yarrow
DATA
