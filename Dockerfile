# cairn's container image: cairn, cairnctl and cairnutl (and the small
# cairn-healthcheck) on an empty base, run as a non-root user, data in the
# /var/lib/cairn volume, etcd's client and peer ports.
#
#   make image                                # builds cairn:latest
#   podman run -d -p 2379:2379 -v cairn-data:/var/lib/cairn cairn:latest
#
# Flags go after the image name (they replace the CMD defaults) or as
# ETCD_* variables (-e ETCD_NAME=m1).
# The build stage needs the golang image; where no registry is reachable,
# scripts/image-test.sh builds the same files on the host and runs only
# the runtime stage below, unchanged.

ARG GO_VERSION=1.26
FROM golang:${GO_VERSION} AS build
WORKDIR /src
# cairn is several Go modules in one workspace (go.work; see the README):
# their go.mod and go.sum files first, so that the download layer is
# reused until a dependency changes.
COPY go.work go.mod go.sum ./
COPY api/go.mod api/go.sum ./api/
COPY client/go.mod client/go.sum ./client/
COPY ctl/go.mod ctl/go.sum ./ctl/
COPY pkg/go.mod pkg/go.sum ./pkg/
COPY server/go.mod server/go.sum ./server/
COPY tests/go.mod tests/go.sum ./tests/
COPY utl/go.mod utl/go.sum ./utl/
RUN go mod download
COPY . .
# Static binaries: the runtime stage has no libc. deploy/ (the health
# check) is a module outside the workspace, built on its own.
ENV CGO_ENABLED=0
RUN go build -trimpath -ldflags='-s -w' -o /out/ ./cmd/cairn ./cmd/cairnctl ./cmd/cairnutl && \
    GOWORK=off go build -C deploy -trimpath -ldflags='-s -w' -o /out/cairn-healthcheck ./healthcheck && \
    mkdir /out/data && \
    echo 'cairn:x:65532:65532:cairn:/var/lib/cairn:/sbin/nologin' > /out/passwd && \
    echo 'cairn:x:65532:' > /out/group

FROM scratch AS runtime
COPY --from=build /out/passwd /out/group /etc/
COPY --from=build /out/cairn /out/cairnctl /out/cairnutl /out/cairn-healthcheck /usr/local/bin/
COPY --from=build --chown=65532:65532 /out/data /var/lib/cairn
USER 65532:65532
WORKDIR /var/lib/cairn
VOLUME ["/var/lib/cairn"]
# client, peer
EXPOSE 2379 2380
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
    CMD ["/usr/local/bin/cairn-healthcheck", "http://127.0.0.1:2379/health"]
ENTRYPOINT ["/usr/local/bin/cairn"]
# Defaults for a single member reachable from outside the container. Any
# arguments given to `run` replace these (the data dir stays in the
# volume: the working directory is /var/lib/cairn, so the default
# <name>.etcd lands there). Do not set a flag both here and as ETCD_*: like
# etcd, cairn refuses a variable shadowed by a flag.
CMD ["--listen-client-urls=http://0.0.0.0:2379", "--advertise-client-urls=http://127.0.0.1:2379", "--listen-peer-urls=http://0.0.0.0:2380"]
