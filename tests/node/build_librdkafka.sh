#!/usr/bin/env bash
# Build librdkafka (C and C++ libraries) into PREFIX from the source that the npm package
# @confluentinc/kafka-javascript@VERSION carries, once per version.
#
# That package links librdkafka. Its prebuilt binary comes from GitHub releases and its own
# from-source build downloads zlib, OpenSSL and curl, none of which this machine reaches; so
# the Makefile builds this librdkafka against Debian's libraries (OpenSSL, SASL, zlib, zstd,
# lz4) and compiles the binding against it (BUILD_LIBRDKAFKA=0). The source is taken from
# the package's tarball (npm pack).
#
# Usage: build_librdkafka.sh VERSION PREFIX
set -euo pipefail
version=$1
prefix=$2
stamp="$prefix/.built-kafka-javascript-$version"
if [ -f "$stamp" ]; then
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "@confluentinc/kafka-javascript@$version" >/dev/null && tar xzf ./*.tgz)
cd "$work/package/deps/librdkafka"
# Output goes outside the source tree: mklove's configure loads any ./configure.<name> file
# in the current directory as a module, so a "configure.log" there would be taken for one.
./configure --prefix="$prefix" --disable-curl >"$work/configure.out" 2>&1 || { cat "$work/configure.out"; exit 1; }
make -j"$(nproc)" libs >"$work/make.out" 2>&1 || { tail -50 "$work/make.out"; exit 1; }
make -C src install >/dev/null
make -C src-cpp install >/dev/null
touch "$stamp"
