#!/bin/bash
# Runs as root in the sandbox before the agent starts.
set -e
mkdir -p /app
cat > /app/names.txt <<'DATA'
Harborton
Zephyrford
Onyxson
Quartzford
Birchton
Mapleton
Sierrason
Cobaltford
Yarrowford
Sierrason
Tundraley
Willowton
Lumenford
Umberley
Quartzson
Violetson
Harborton
Zephyrley
Zephyrley
Yarrowley
Amberford
Amberson
Lumenley
Kelpford
Pepperford
DATA
