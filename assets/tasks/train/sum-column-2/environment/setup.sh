#!/bin/bash
# Runs as root in the sandbox before the agent starts.
set -e
mkdir -p /app
cat > /app/sales.csv <<'DATA'
id,item,qty,price
1,delta,46,5354
2,violet,24,2334
3,violet,24,2047
4,lumen,13,8118
5,harbor,43,2531
6,juniper,16,5068
7,kelp,46,8406
8,violet,47,291
9,garnet,38,1264
10,ember,45,9726
11,indigo,2,567
12,quartz,44,7736
13,maple,36,1390
14,birch,29,752
15,yarrow,9,9335
16,juniper,17,8782
17,maple,33,4239
18,birch,34,3767
19,juniper,19,557
20,tundra,32,2310
21,tundra,47,3551
22,nectar,49,4636
23,juniper,10,3650
24,tundra,30,1954
25,maple,34,7472
26,sierra,7,3803
27,tundra,12,1645
28,kelp,2,6153
29,kelp,18,7857
30,sierra,42,8674
DATA
