#!/bin/bash
# Runs as root in the sandbox before the agent starts.
set -e
mkdir -p /app
cat > /app/birch.log <<'DATA'
yarrow 855
zephyr 781
indigo 722
zephyr 186
sierra 653
ember 799
yarrow 410
garnet 841
umber 150
raven 674
tundra 731
kelp 353
quartz 434
amber 212
xenon 815
amber 619
umber 608
willow 454
garnet 981
cobalt 722
birch 971
harbor 749
pepper 712
delta 597
xenon 225
quartz 126
juniper 465
nectar 55
kelp 525
fjord 202
maple 480
tundra 914
DATA
