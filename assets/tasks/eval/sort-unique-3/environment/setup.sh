#!/bin/bash
# Runs as root in the sandbox before the agent starts.
set -e
mkdir -p /app
cat > /app/cities.txt <<'DATA'
Umberton
Birchson
Yarrowford
Onyxton
Deltaley
Juniperley
Juniperley
Indigoson
Lumenton
Cobaltson
Mapleson
Amberson
Amberford
Pepperley
Kelpley
Quartzford
Nectarton
Indigoford
Juniperton
Xenonton
Emberton
Onyxley
Emberson
Indigoton
Deltason
DATA
