#!/bin/bash
# Runs as root in the sandbox before the agent starts.
set -e
mkdir -p /app
cat > /app/worker.log <<'DATA'
2026-11-23 NOTICE zephyr request 0
2026-11-12 INFO harbor request 1
2026-11-28 INFO cobalt request 2
2026-11-19 NOTICE yarrow request 3
2026-11-11 TIMEOUT ember request 4
2026-11-19 INFO yarrow request 5
2026-11-25 NOTICE raven request 6
2026-11-13 TIMEOUT amber request 7
2026-11-12 NOTICE harbor request 8
2026-11-25 DEBUG amber request 9
2026-11-15 NOTICE cobalt request 10
2026-11-15 DEBUG amber request 11
2026-11-25 NOTICE indigo request 12
2026-11-23 INFO indigo request 13
2026-11-23 NOTICE nectar request 14
2026-11-22 INFO raven request 15
2026-11-28 DEBUG willow request 16
2026-11-11 TIMEOUT willow request 17
2026-11-16 TIMEOUT fjord request 18
2026-11-10 TIMEOUT juniper request 19
2026-11-22 TIMEOUT garnet request 20
2026-11-26 NOTICE pepper request 21
2026-11-10 DEBUG ember request 22
2026-11-25 TIMEOUT garnet request 23
2026-11-27 DEBUG nectar request 24
2026-11-16 NOTICE xenon request 25
2026-11-27 NOTICE ember request 26
2026-11-20 INFO violet request 27
2026-11-16 NOTICE birch request 28
2026-11-20 INFO kelp request 29
2026-11-16 TIMEOUT garnet request 30
2026-11-11 INFO sierra request 31
2026-11-22 NOTICE tundra request 32
2026-11-16 DEBUG fjord request 33
2026-11-15 TIMEOUT onyx request 34
2026-11-13 DEBUG pepper request 35
2026-11-28 DEBUG tundra request 36
2026-11-26 DEBUG cobalt request 37
2026-11-28 TIMEOUT kelp request 38
2026-11-21 NOTICE ember request 39
2026-11-19 DEBUG sierra request 40
2026-11-25 INFO indigo request 41
2026-11-19 INFO xenon request 42
2026-11-14 NOTICE violet request 43
2026-11-25 NOTICE fjord request 44
2026-11-10 NOTICE harbor request 45
2026-11-11 TIMEOUT indigo request 46
2026-11-17 DEBUG tundra request 47
2026-11-22 NOTICE harbor request 48
2026-11-22 DEBUG kelp request 49
2026-11-17 NOTICE harbor request 50
2026-11-10 INFO amber request 51
2026-11-11 DEBUG ember request 52
2026-11-13 INFO nectar request 53
2026-11-16 TIMEOUT kelp request 54
2026-11-13 INFO indigo request 55
2026-11-11 TIMEOUT sierra request 56
2026-11-26 DEBUG indigo request 57
2026-11-18 NOTICE harbor request 58
2026-11-14 INFO nectar request 59
DATA
