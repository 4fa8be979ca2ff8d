#!/bin/bash
# Runs as root in the sandbox before the agent starts.
set -e
mkdir -p /app
cat > /app/service.log <<'DATA'
2026-11-14 NOTICE garnet request 0
2026-11-25 NOTICE willow request 1
2026-11-25 DEBUG yarrow request 2
2026-11-20 NOTICE maple request 3
2026-11-21 DEBUG delta request 4
2026-11-13 NOTICE cobalt request 5
2026-11-12 DENIED ember request 6
2026-11-15 INFO zephyr request 7
2026-11-16 DENIED amber request 8
2026-11-21 DENIED amber request 9
2026-11-12 NOTICE amber request 10
2026-11-21 DEBUG sierra request 11
2026-11-25 DEBUG umber request 12
2026-11-15 NOTICE cobalt request 13
2026-11-24 INFO umber request 14
2026-11-14 DENIED zephyr request 15
2026-11-16 INFO violet request 16
2026-11-16 DENIED zephyr request 17
2026-11-11 INFO delta request 18
2026-11-26 INFO quartz request 19
2026-11-11 INFO ember request 20
2026-11-23 DEBUG tundra request 21
2026-11-17 DEBUG fjord request 22
2026-11-17 INFO onyx request 23
2026-11-26 DEBUG maple request 24
2026-11-21 DEBUG maple request 25
2026-11-12 DEBUG quartz request 26
2026-11-17 NOTICE sierra request 27
2026-11-26 INFO fjord request 28
2026-11-14 NOTICE xenon request 29
2026-11-19 DENIED garnet request 30
2026-11-24 NOTICE garnet request 31
2026-11-16 NOTICE sierra request 32
2026-11-23 NOTICE amber request 33
2026-11-27 NOTICE xenon request 34
2026-11-26 DEBUG xenon request 35
2026-11-18 DEBUG nectar request 36
2026-11-14 DENIED lumen request 37
2026-11-17 DENIED umber request 38
2026-11-20 NOTICE tundra request 39
2026-11-26 NOTICE onyx request 40
2026-11-23 DENIED xenon request 41
2026-11-23 DEBUG cobalt request 42
2026-11-10 DENIED quartz request 43
2026-11-26 NOTICE violet request 44
2026-11-12 DENIED onyx request 45
2026-11-24 INFO tundra request 46
2026-11-19 DEBUG yarrow request 47
2026-11-18 INFO violet request 48
2026-11-19 NOTICE tundra request 49
2026-11-23 NOTICE amber request 50
2026-11-13 INFO harbor request 51
2026-11-18 INFO tundra request 52
2026-11-24 NOTICE lumen request 53
2026-11-19 NOTICE willow request 54
2026-11-26 DEBUG ember request 55
2026-11-19 NOTICE sierra request 56
2026-11-27 NOTICE harbor request 57
2026-11-18 DEBUG ember request 58
2026-11-25 DEBUG fjord request 59
DATA
