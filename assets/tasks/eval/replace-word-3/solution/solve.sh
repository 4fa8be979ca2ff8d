#!/bin/bash
set -e
sed -i 's/yarrow/fjord/g' /app/notes.txt
