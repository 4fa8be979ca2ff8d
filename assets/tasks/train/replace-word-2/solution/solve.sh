#!/bin/bash
set -e
sed -i 's/kelp/xenon/g' /app/notes.txt
