#!/bin/bash
# Runs as root in the sandbox before the agent starts.
set -e
mkdir -p /app
cat > /app/orders.csv <<'DATA'
id,item,qty,price
1,cobalt,44,9605
2,violet,20,7448
3,cobalt,1,4695
4,birch,21,8473
5,sierra,22,6405
6,indigo,24,4301
7,maple,28,1585
8,cobalt,48,5769
9,nectar,33,2776
10,tundra,41,2736
11,nectar,44,5551
12,tundra,35,9517
13,lumen,21,6119
14,raven,36,4354
15,maple,13,8904
16,raven,30,3307
17,lumen,28,443
18,yarrow,28,6766
19,cobalt,43,3481
20,cobalt,14,9747
21,nectar,27,7778
22,umber,41,1169
23,indigo,40,4645
24,umber,5,7742
25,tundra,11,5012
26,tundra,17,9742
27,sierra,20,1256
28,birch,14,763
29,indigo,45,9609
30,garnet,2,5554
DATA
