#!/bin/bash
set -e
printf '%s\n' 'sierra zephyr 18' > /app/ember_1.txt
