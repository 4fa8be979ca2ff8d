#!/bin/bash
# Runs as root in the sandbox before the agent starts.
set -e
mkdir -p /app
cat > /app/guests.txt <<'DATA'
Sierraton
Umberford
Xenonson
Birchley
Willowley
Ravenford
Onyxford
Willowley
Mapleford
Birchford
Xenonford
Ravenley
Lumenley
Mapleson
Lumenford
Lumenford
Quartzton
Cobaltton
Quartzley
Yarrowford
Deltaley
Sierraton
Deltaton
Zephyrford
Lumenton
DATA
