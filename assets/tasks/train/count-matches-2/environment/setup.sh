#!/bin/bash
# Runs as root in the sandbox before the agent starts.
set -e
mkdir -p /app
cat > /app/gateway.log <<'DATA'
2026-11-23 DEBUG nectar request 0
2026-11-16 NOTICE yarrow request 1
2026-11-25 NOTICE violet request 2
2026-11-28 DEBUG yarrow request 3
2026-11-20 NOTICE maple request 4
2026-11-21 DEBUG delta request 5
2026-11-13 NOTICE cobalt request 6
2026-11-12 WARN ember request 7
2026-11-15 INFO zephyr request 8
2026-11-16 WARN amber request 9
2026-11-21 WARN amber request 10
2026-11-12 NOTICE amber request 11
2026-11-21 DEBUG sierra request 12
2026-11-25 DEBUG umber request 13
2026-11-15 NOTICE cobalt request 14
2026-11-24 INFO umber request 15
2026-11-14 WARN zephyr request 16
2026-11-16 INFO violet request 17
2026-11-16 WARN zephyr request 18
2026-11-11 INFO delta request 19
2026-11-26 INFO quartz request 20
2026-11-11 INFO ember request 21
2026-11-23 DEBUG tundra request 22
2026-11-17 DEBUG fjord request 23
2026-11-17 INFO onyx request 24
2026-11-26 DEBUG maple request 25
2026-11-21 DEBUG maple request 26
2026-11-12 DEBUG quartz request 27
2026-11-17 NOTICE sierra request 28
2026-11-26 INFO fjord request 29
2026-11-14 NOTICE xenon request 30
2026-11-19 WARN garnet request 31
2026-11-24 NOTICE garnet request 32
2026-11-16 NOTICE sierra request 33
2026-11-23 NOTICE amber request 34
2026-11-27 NOTICE xenon request 35
2026-11-26 DEBUG xenon request 36
2026-11-18 DEBUG nectar request 37
2026-11-14 WARN lumen request 38
2026-11-17 WARN umber request 39
2026-11-20 NOTICE tundra request 40
2026-11-26 NOTICE onyx request 41
2026-11-23 WARN xenon request 42
2026-11-23 DEBUG cobalt request 43
2026-11-10 WARN quartz request 44
2026-11-26 NOTICE violet request 45
2026-11-12 WARN onyx request 46
2026-11-24 INFO tundra request 47
2026-11-19 DEBUG yarrow request 48
2026-11-18 INFO violet request 49
2026-11-19 NOTICE tundra request 50
2026-11-23 NOTICE amber request 51
2026-11-13 INFO harbor request 52
2026-11-18 INFO tundra request 53
2026-11-24 NOTICE lumen request 54
2026-11-19 NOTICE willow request 55
2026-11-26 DEBUG ember request 56
2026-11-19 NOTICE sierra request 57
2026-11-27 NOTICE harbor request 58
2026-11-18 DEBUG ember request 59
DATA
