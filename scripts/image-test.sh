#!/usr/bin/env bash
# Builds cairn's container image offline and checks that it runs: the
# binaries are built on this host (static, CGO_ENABLED=0), the Dockerfile's
# runtime stage is used unchanged with a build stage that only holds them
# (no registry is needed: the runtime stage is FROM scratch), then a
# container is started and its /health, its HEALTHCHECK and a put/get are
# checked. Needs podman (apt-get install podman) and root, or a working
# rootless podman. Usage: ./scripts/image-test.sh   (make image-test)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

if ! command -v podman >/dev/null; then
  echo "SKIP: podman is not installed (apt-get install podman)"; exit 0
fi
image=localhost/cairn-image-test:$$
name=cairn-image-test-$$
work=$(mktemp -d)
cleanup() {
  podman rm -f "$name" >/dev/null 2>&1 || true
  podman rmi -f "$image" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "== static binaries"
mkdir -p "$work/out/data"
CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$work/out/" ./cmd/cairn ./cmd/cairnctl ./cmd/cairnutl
CGO_ENABLED=0 GOWORK=off go build -C deploy -trimpath -ldflags='-s -w' -o "$work/out/cairn-healthcheck" ./healthcheck
echo 'cairn:x:65532:65532:cairn:/var/lib/cairn:/sbin/nologin' > "$work/out/passwd"
echo 'cairn:x:65532:' > "$work/out/group"

echo "== image (the Dockerfile's runtime stage)"
{
  echo "FROM scratch AS build"
  echo "COPY out/ /out/"
  sed -n '/^FROM scratch AS runtime$/,$p' Dockerfile
} > "$work/Containerfile"
grep -q '^FROM scratch AS runtime$' "$work/Containerfile" || { echo "Dockerfile has no runtime stage"; exit 1; }
podman build -q --format docker -t "$image" -f "$work/Containerfile" "$work" >/dev/null

echo "== image metadata"
inspect() { podman image inspect "$image" --format "$1"; }
[ "$(inspect '{{.Config.User}}')" = "65532:65532" ] || { echo "image runs as $(inspect '{{.Config.User}}'), want 65532:65532"; exit 1; }
inspect '{{json .Config.ExposedPorts}}' | grep -q '2379/tcp' || { echo "2379 not exposed"; exit 1; }
inspect '{{json .Config.ExposedPorts}}' | grep -q '2380/tcp' || { echo "2380 not exposed"; exit 1; }
inspect '{{json .Config.Volumes}}' | grep -q '/var/lib/cairn' || { echo "no /var/lib/cairn volume"; exit 1; }
inspect '{{json .Config.Healthcheck}}' | grep -q '/health' || { echo "no HEALTHCHECK on /health"; exit 1; }

echo "== run"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
args=(--name image-test --listen-client-urls "http://127.0.0.1:$port" --advertise-client-urls "http://127.0.0.1:$port"
      --listen-peer-urls http://127.0.0.1:0 --initial-advertise-peer-urls http://127.0.0.1:2380)
# in_image runs a command inside the running image as its user.
# Where the OCI runtime cannot start containers (sandboxes without
# cgroup delegation: "cgroups in hybrid mode not supported"), the
# image's own root filesystem is mounted and run with chroot as the
# image's user instead: the same files, user and working directory.
mode=podman
# --health-interval=disable: the periodic check needs systemd timers; the
# check itself is run below.
if ! podman run -d --name "$name" --network host --health-interval=disable "$image" "${args[@]}" >"$work/run.log" 2>&1; then
  echo "podman run failed here ($(tail -1 "$work/run.log")); running the image's rootfs with chroot"
  mode=chroot
  podman rm -f "$name" >/dev/null 2>&1 || true
  mnt=$(podman image mount "$image")
  user=$(inspect '{{.Config.User}}')
  # The image's VOLUME, as a container runtime would provide it.
  mkdir -p "$work/volume" && chown "$user" "$work/volume" && chmod 0700 "$work/volume"
  mount --bind "$work/volume" "$mnt/var/lib/cairn"
  trap 'kill "${pid:-}" 2>/dev/null; wait "${pid:-}" 2>/dev/null; umount "$mnt/var/lib/cairn"; podman image unmount "$image" >/dev/null 2>&1; cleanup' EXIT
  entry=$(inspect '{{index .Config.Entrypoint 0}}')
  # chroot changes to the new root's /, so the working directory (where
  # the default data dir lands) is given as --data-dir instead.
  wd=$(inspect '{{.Config.WorkingDir}}')
  chroot --userspec="$user" "$mnt" "$entry" "${args[@]}" --data-dir "$wd/image-test.etcd" >"$work/cairn.log" 2>&1 &
  pid=$!
fi
in_image() {
  if [ "$mode" = podman ]; then podman exec "$name" "$@"; else chroot --userspec="$(inspect '{{.Config.User}}')" "$mnt" "$@"; fi
}
logs() { if [ "$mode" = podman ]; then podman logs "$name"; else cat "$work/cairn.log"; fi; }

ok=
for _ in $(seq 1 60); do
  if curl -fsS "http://127.0.0.1:$port/health" 2>/dev/null | grep -q '"health":"true"'; then ok=1; break; fi
  sleep 1
done
[ -n "$ok" ] || { echo "/health never answered true"; logs | tail -20; exit 1; }
echo "/health: $(curl -fsS "http://127.0.0.1:$port/health")"

echo "== HEALTHCHECK (the image's own command, pointed at this member)"
mapfile -t hc < <(podman image inspect "$image" --format '{{range .Config.Healthcheck.Test}}{{println .}}{{end}}' | sed '/^$/d')
[ "${hc[0]}" = CMD ] || { echo "HEALTHCHECK is not an exec form: ${hc[*]}"; exit 1; }
in_image "${hc[1]}" "http://127.0.0.1:$port/health" && echo "healthcheck: healthy"

echo "== put/get with the image's cairnctl, as the image's user"
in_image /usr/local/bin/cairnctl --endpoints "127.0.0.1:$port" put greeting hello
got=$(in_image /usr/local/bin/cairnctl --endpoints "127.0.0.1:$port" get greeting --print-value-only)
[ "$got" = hello ] || { echo "get returned '$got'"; exit 1; }
in_image /usr/local/bin/cairnutl version >/dev/null
ls -n "${mnt:-/nonexistent}/var/lib/cairn" >/dev/null 2>&1 || true
echo "image test passed ($mode)"
