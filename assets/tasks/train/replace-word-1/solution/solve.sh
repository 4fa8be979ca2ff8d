#!/bin/bash
set -e
sed -i 's/fjord/indigo/g' /app/notes.txt
