#!/bin/bash
# Runs as root in the sandbox before the agent starts.
set -e
mkdir -p /app
cat > /app/orders.csv <<'DATA'
id,item,qty,price
1,kelp,3,5663
2,sierra,15,6876
3,quartz,4,9213
4,ember,37,4674
5,onyx,3,1330
6,cobalt,14,6417
7,delta,15,7746
8,sierra,39,1596
9,juniper,43,3183
10,pepper,34,680
11,garnet,2,3065
12,ember,1,2414
13,delta,38,8972
14,harbor,11,6572
15,lumen,9,5715
16,zephyr,2,7251
17,birch,5,6392
18,maple,2,8429
19,indigo,18,6535
20,delta,15,2048
21,amber,47,9213
22,juniper,18,7894
23,ember,46,1359
24,lumen,31,1449
25,yarrow,50,6958
26,fjord,17,2716
27,harbor,49,8779
28,kelp,42,3472
29,lumen,41,4295
30,ember,49,8507
DATA
