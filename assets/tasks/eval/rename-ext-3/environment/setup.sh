#!/bin/bash
# Runs as root in the sandbox before the agent starts.
set -e
mkdir -p /app/notes
echo 'maple note' > /app/notes/maple.txt
echo 'sierra note' > /app/notes/sierra.txt
echo 'pepper note' > /app/notes/pepper.txt
echo 'yarrow note' > /app/notes/yarrow.txt
echo keep > /app/notes/readme.rst
