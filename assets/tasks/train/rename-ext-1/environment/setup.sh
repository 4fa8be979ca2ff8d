#!/bin/bash
# Runs as root in the sandbox before the agent starts.
set -e
mkdir -p /app/notes
echo 'birch note' > /app/notes/birch.txt
echo 'yarrow note' > /app/notes/yarrow.txt
echo 'tundra note' > /app/notes/tundra.txt
echo 'xenon note' > /app/notes/xenon.txt
echo 'kelp note' > /app/notes/kelp.txt
echo keep > /app/notes/readme.rst
