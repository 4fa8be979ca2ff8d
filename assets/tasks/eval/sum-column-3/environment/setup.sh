#!/bin/bash
# Runs as root in the sandbox before the agent starts.
set -e
mkdir -p /app
cat > /app/stock.csv <<'DATA'
id,item,qty,price
1,raven,34,516
2,cobalt,44,9605
3,violet,20,7448
4,cobalt,1,4695
5,birch,21,8473
6,sierra,22,6405
7,indigo,24,4301
8,maple,28,1585
9,cobalt,48,5769
10,nectar,33,2776
11,tundra,41,2736
12,nectar,44,5551
13,tundra,35,9517
14,lumen,21,6119
15,raven,36,4354
16,maple,13,8904
17,raven,30,3307
18,lumen,28,443
19,yarrow,28,6766
20,cobalt,43,3481
21,cobalt,14,9747
22,nectar,27,7778
23,umber,41,1169
24,indigo,40,4645
25,umber,5,7742
26,tundra,11,5012
27,tundra,17,9742
28,sierra,20,1256
29,birch,14,763
30,indigo,45,9609
DATA
