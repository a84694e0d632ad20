#!/usr/bin/env bash
# Prints one hash of everything the extensions are built from (csrc/ and
# setup.py), so that scripts/gpu-build.sh installs extensions prebuilt by
# scripts/prebuild.sh only for the very sources in the tree.
set -euo pipefail
cd "$(dirname "$0")/.."
find csrc setup.py -type f ! -name '*.pyc' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1
