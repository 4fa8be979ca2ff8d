#!/bin/bash
# Runs as root in the sandbox before the agent starts.
set -e
mkdir -p /app
cat > /app/notes.txt <<'DATA'
garnet zephyr garnet maple
birch onyx nectar tundra
kelp zephyr fjord pepper pepper
nectar amber yarrow sierra
maple birch kelp willow fjord
violet pepper kelp violet
delta maple juniper willow fjord
harbor umber fjord zephyr sierra
tundra zephyr onyx zephyr
fjord violet onyx sierra sierra
fjord xenon onyx umber tundra
fjord umber tundra pepper lumen
raven nectar harbor yarrow
amber violet fjord raven sierra
onyx onyx maple zephyr fjord
onyx garnet delta nectar
sierra willow juniper cobalt
delta fjord juniper amber kelp
cobalt fjord ember tundra harbor
juniper pepper xenon willow fjord
DATA
