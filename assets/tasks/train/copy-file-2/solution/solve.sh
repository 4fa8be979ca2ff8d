#!/bin/bash
set -e
cp /app/juniper.cfg /app/willow.cfg
