#!/bin/bash
# Runs as root in the sandbox before the agent starts.
set -e
mkdir -p /app
cat > /app/notes.txt <<'DATA'
delta raven violet umber
violet xenon yarrow lumen kelp
maple zephyr cobalt yarrow violet
xenon ember ember quartz
harbor sierra violet kelp
willow yarrow delta maple garnet
delta garnet tundra nectar
birch yarrow kelp raven nectar
yarrow ember indigo indigo kelp
lumen yarrow raven juniper quartz
nectar raven raven raven
harbor garnet yarrow cobalt quartz
zephyr nectar garnet quartz
delta tundra yarrow umber raven
quartz indigo cobalt ember
zephyr violet delta violet
onyx quartz nectar harbor yarrow
nectar ember sierra lumen
kelp lumen sierra birch
zephyr pepper birch amber yarrow
DATA
