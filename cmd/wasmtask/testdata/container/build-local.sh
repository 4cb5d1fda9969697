#!/usr/bin/env bash
# Builds cmd/wasmtask/Dockerfile with podman on a machine that cannot pull
# its base images, runs the image and checks it over MCP.
#
# It makes two local stand-ins for the bases from what a Debian host has:
#
#   localhost/wasmtask-go:<go version>  for GO_IMAGE (golang:…-trixie): a
#       static busybox for /bin/sh, the host's Go at /usr/local/go on PATH,
#       CA certificates, GOPROXY from the host's go env, GOTOOLCHAIN=local;
#   localhost/wasmtask-static:nonroot   for BASE_IMAGE (distroless static
#       nonroot): /etc/passwd and /etc/group with nonroot 65532, CA
#       certificates, time zones, /tmp and /home/nonroot; no shell, no libc.
#
# then builds the Dockerfile on them with VERSION=v0.0.0-local, runs it with
# its default command, published on loopback, and checks: the MCP exchange
# (TestContainerImage: initialize names the version, tools/list the bundled
# tools, tools/call add, word_count and sha256 answer, a foreign Host is
# refused), `wasmtask --version`, the user the server runs as (65532), that
# the compile cache is written, and prints the image's size. The
# container is removed at the end; the three images are kept (about 270 MB
# in all), replaced by the next run: podman rmi them when done.
#
# Needs: root, podman (run with runc), Go 1.26 at /usr/local/go, apt-get
# (to download busybox-static), curl, network access to the Go module proxy
# and Debian's packages. Takes a few minutes; CI does not run it.
#
# Environment: PORT (host port; default: one podman picks), RUNTIME (the
# OCI runtime, default runc), IMAGE (the tag built, default
# localhost/wasmtask:local).
set -euo pipefail
cd "$(dirname "$0")/../../../.."

runtime=${RUNTIME:-runc}
image=${IMAGE:-localhost/wasmtask:local}
version=v0.0.0-local
goroot=/usr/local/go
gover=$("$goroot/bin/go" env GOVERSION)
goproxy=$("$goroot/bin/go" env GOPROXY)
go_image=localhost/wasmtask-go:${gover#go}
base_image=localhost/wasmtask-static:nonroot
certs=/etc/ssl/certs/ca-certificates.crt

work=$(mktemp -d)
cid=
cleanup() {
  if [ -n "$cid" ]; then
    podman --runtime "$runtime" rm -f "$cid" >/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

say() { printf '== %s\n' "$*"; }

# import_rootfs DIR TAG [--change …]: an image of exactly DIR, ownership and
# modes as they are (podman import keeps them; COPY would make them root's).
import_rootfs() {
  local dir=$1 tag=$2
  shift 2
  tar -C "$dir" --numeric-owner -cf - . | podman import "$@" - "$tag" >/dev/null
}

# The previous run's images: each run starts from scratch, and no untagged
# image is left behind (the build keeps no intermediate images either).
podman rmi --ignore "$image" "$go_image" "$base_image" >/dev/null

say "builder stand-in $go_image (host $gover, GOPROXY=$goproxy)"
# Downloaded as root: apt's sandbox user cannot write to the private $work.
(cd "$work" && apt-get download -qq -o APT::Sandbox::User=root busybox-static >/dev/null)
root=$work/go-root
mkdir -p "$root"/{bin,etc/ssl/certs,root,tmp,usr/local,go}
chmod 1777 "$root/tmp"
dpkg-deb -x "$work"/busybox-static_*.deb "$work/busybox"
cp "$work/busybox/bin/busybox" "$root/bin/busybox"
for applet in $("$root/bin/busybox" --list); do
  [ "$applet" = busybox ] || ln -s busybox "$root/bin/$applet"
done
cp "$certs" "$root/etc/ssl/certs/"
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\n' >"$root/etc/group"
cp -a "$goroot" "$root/usr/local/go"
import_rootfs "$root" "$go_image" \
  --change 'ENV PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV GOPATH=/go' --change 'ENV GOTOOLCHAIN=local' \
  --change "ENV GOPROXY=$goproxy" \
  --change 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' \
  --change 'WORKDIR /go' --change 'CMD ["/bin/sh"]'
rm -rf "$root"

say "runtime stand-in $base_image"
root=$work/static-root
mkdir -p "$root"/{etc/ssl/certs,usr/share,root,tmp,home/nonroot}
chmod 1777 "$root/tmp"
chmod 700 "$root/root" "$root/home/nonroot"
chown 65532:65532 "$root/home/nonroot"
cp "$certs" "$root/etc/ssl/certs/"
cp -a /usr/share/zoneinfo "$root/usr/share/"
cat >"$root/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
PASSWD
cat >"$root/etc/group" <<'GROUP'
root:x:0:
nobody:x:65534:
tty:x:5:
staff:x:50:
nonroot:x:65532:
GROUP
import_rootfs "$root" "$base_image" \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' \
  --change 'USER 65532' --change 'WORKDIR /home/nonroot'
rm -rf "$root"

say "building cmd/wasmtask/Dockerfile as $image"
# --ignorefile: podman 4 does not read Dockerfile.dockerignore by itself.
# --network host: go mod download reaches the module proxy as the host does.
# --layers=false: the build stage (some 600 MB) is not kept as an image.
podman build --runtime "$runtime" --pull=never --network host --layers=false \
  -f cmd/wasmtask/Dockerfile --ignorefile cmd/wasmtask/Dockerfile.dockerignore \
  --build-arg GO_IMAGE="$go_image" --build-arg BASE_IMAGE="$base_image" \
  --build-arg VERSION="$version" -t "$image" .

say "wasmtask --version"
got=$(podman --runtime "$runtime" run --rm "$image" --version)
echo "$got"
case $got in
*"$version"*) ;;
*) echo "FAIL: --version printed $got, want $version" >&2; exit 1 ;;
esac

say "running $image"
cid=$(podman --runtime "$runtime" run -d -p "127.0.0.1:${PORT:-}:8080" "$image")
hostport=$(podman port "$cid" 8080/tcp)
port=${hostport##*:}
base=http://127.0.0.1:$port
# The server is ready when /readyz answers 200: curl retries a refused
# connection and a 503 (not ready yet), each retry printing the error.
if ! curl -fsS --retry 60 --retry-connrefused --retry-delay 1 -o /dev/null "$base/readyz"; then
  podman logs "$cid" >&2
  echo "FAIL: $base/readyz never answered 200" >&2
  exit 1
fi

say "user of the server process"
pid=$(podman inspect --format '{{.State.Pid}}' "$cid")
uids=$(awk '/^Uid:/ {print $2, $3, $4, $5}' "/proc/$pid/status")
gids=$(awk '/^Gid:/ {print $2, $3, $4, $5}' "/proc/$pid/status")
echo "uid $uids, gid $gids"
if [ "$uids" != "65532 65532 65532 65532" ] || [ "$gids" != "65532 65532 65532 65532" ]; then
  echo "FAIL: the server runs as uid $uids gid $gids, want 65532" >&2
  exit 1
fi

say "MCP over $base/mcp"
WASMTASK_IMAGE_URL=$base/mcp WASMTASK_IMAGE_VERSION=$version \
  "$goroot/bin/go" test -count=1 -run '^TestContainerImage$' -v ./cmd/wasmtask/

say "compile cache"
# The calls compiled the tools: their code is in /cache, which the server's
# user can write.
cached=$(podman diff "$cid" | grep -c '^A /cache/.' || true)
echo "$cached files added under /cache"
if [ "$cached" -eq 0 ]; then
  echo "FAIL: nothing was written to /cache" >&2
  exit 1
fi

say "sizes (podman image inspect .Size, bytes)"
size=$(podman image inspect --format '{{.Size}}' "$image")
base_size=$(podman image inspect --format '{{.Size}}' "$base_image")
mb() { awk -v b="$1" 'BEGIN { printf "%.1f MB", b / 1e6 }'; }
echo "$image: $size ($(mb "$size"))"
echo "$base_image: $base_size ($(mb "$base_size"))"
echo "the layers on the base: $((size - base_size)) ($(mb $((size - base_size))))"
say "OK"
