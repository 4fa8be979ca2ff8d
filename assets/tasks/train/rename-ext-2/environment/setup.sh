#!/bin/bash
# Runs as root in the sandbox before the agent starts.
set -e
mkdir -p /app/docs
echo 'garnet note' > /app/docs/garnet.log
echo 'sierra note' > /app/docs/sierra.log
echo 'violet note' > /app/docs/violet.log
echo 'nectar note' > /app/docs/nectar.log
echo 'zephyr note' > /app/docs/zephyr.log
echo keep > /app/docs/readme.rst
