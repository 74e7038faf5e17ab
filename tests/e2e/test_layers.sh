#!/bin/sh
# test_layers.sh - the include-layer check as a test (tests/check-layers).
exec "$(dirname "$0")/../check-layers" --tap
