#!/bin/bash
# Runs as root in the sandbox before the agent starts.
set -e
mkdir -p /app/notes
echo 'garnet note' > /app/notes/garnet.txt
echo 'sierra note' > /app/notes/sierra.txt
echo 'violet note' > /app/notes/violet.txt
echo 'nectar note' > /app/notes/nectar.txt
echo 'zephyr note' > /app/notes/zephyr.txt
echo keep > /app/notes/readme.rst
