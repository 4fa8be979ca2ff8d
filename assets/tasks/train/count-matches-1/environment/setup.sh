#!/bin/bash
# Runs as root in the sandbox before the agent starts.
set -e
mkdir -p /app
cat > /app/service.log <<'DATA'
2026-11-23 NOTICE onyx request 0
2026-11-17 NOTICE kelp request 1
2026-11-22 INFO lumen request 2
2026-11-21 ERROR birch request 3
2026-11-20 INFO delta request 4
2026-11-22 ERROR fjord request 5
2026-11-12 DEBUG maple request 6
2026-11-20 NOTICE yarrow request 7
2026-11-20 INFO kelp request 8
2026-11-12 ERROR indigo request 9
2026-11-27 ERROR ember request 10
2026-11-17 ERROR zephyr request 11
2026-11-25 ERROR violet request 12
2026-11-21 ERROR tundra request 13
2026-11-23 ERROR nectar request 14
2026-11-16 DEBUG zephyr request 15
2026-11-16 ERROR juniper request 16
2026-11-22 DEBUG nectar request 17
2026-11-19 NOTICE tundra request 18
2026-11-17 ERROR zephyr request 19
2026-11-28 INFO onyx request 20
2026-11-14 ERROR zephyr request 21
2026-11-19 INFO sierra request 22
2026-11-26 INFO quartz request 23
2026-11-27 ERROR lumen request 24
2026-11-28 INFO cobalt request 25
2026-11-16 INFO maple request 26
2026-11-10 ERROR sierra request 27
2026-11-11 INFO ember request 28
2026-11-15 INFO birch request 29
2026-11-17 DEBUG zephyr request 30
2026-11-23 ERROR fjord request 31
2026-11-25 ERROR indigo request 32
2026-11-17 DEBUG zephyr request 33
2026-11-16 DEBUG kelp request 34
2026-11-16 NOTICE willow request 35
2026-11-14 DEBUG raven request 36
2026-11-27 ERROR zephyr request 37
2026-11-20 DEBUG birch request 38
2026-11-18 ERROR birch request 39
2026-11-12 DEBUG juniper request 40
2026-11-11 ERROR umber request 41
2026-11-14 ERROR xenon request 42
2026-11-22 DEBUG fjord request 43
2026-11-17 NOTICE amber request 44
2026-11-23 ERROR raven request 45
2026-11-27 ERROR onyx request 46
2026-11-14 DEBUG fjord request 47
2026-11-20 INFO yarrow request 48
2026-11-28 INFO pepper request 49
2026-11-21 ERROR violet request 50
2026-11-24 NOTICE indigo request 51
2026-11-15 INFO xenon request 52
2026-11-23 INFO amber request 53
2026-11-25 DEBUG birch request 54
2026-11-20 DEBUG birch request 55
2026-11-18 ERROR fjord request 56
2026-11-14 ERROR sierra request 57
2026-11-25 DEBUG delta request 58
2026-11-21 DEBUG kelp request 59
DATA
