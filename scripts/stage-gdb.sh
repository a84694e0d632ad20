#!/usr/bin/env bash
# Prepares gdb for the GPU host, which has none: Debian's gdb-minimal and the
# libraries it needs beyond the C library, under stage/gdb/ (git-ignored via
# .git/info/exclude, about 30 MB: one device call's carry), with stage/gdb/run,
# which starts it on them.  A hung GPU case then prints every thread's native
# stack of each rank before the harness ends it (tests/gpu/harness.py):
#   bash scripts/stage-gdb.sh
#   carry ["stage/gdb"]:  NCCL_CORE_GDB=stage/gdb/run NCCL_CORE_GPU_ONLY=<case> ... pytest tests/gpu/test_gpu_suite.py
set -euo pipefail
cd "$(dirname "$0")/.."
dest=stage/gdb
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get download -q gdb-minimal libdebuginfod1 libipt2 libxxhash0 >/dev/null 2>&1)
for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$tmp/root"; done
mkdir -p .git/info
grep -qx '/stage/' .git/info/exclude 2>/dev/null || echo '/stage/' >> .git/info/exclude
rm -rf "$dest" && mkdir -p "$dest/lib"
cp "$tmp/root/usr/bin/gdb" "$dest/gdb"
cp -L "$tmp"/root/usr/lib/x86_64-linux-gnu/lib*.so* "$dest/lib/"
# Every library it links but the C library's own (the host's glibc is newer).
for lib in $(LD_LIBRARY_PATH="$dest/lib" ldd "$dest/gdb" | awk '/=>/ {print $3}'); do
  case $(basename "$lib") in
    libc.so*|libm.so*|libpthread*|ld-linux*|libdl*|librt*) ;;
    *) cp -L -n "$lib" "$dest/lib/" ;;
  esac
done
cat > "$dest/run" <<'RUN'
#!/usr/bin/env bash
here=$(cd "$(dirname "$0")" && pwd)
LD_LIBRARY_PATH="$here/lib" exec "$here/gdb" "$@"
RUN
chmod +x "$dest/run" "$dest/gdb"
"$dest/run" --version | head -1
du -sh "$dest"
