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
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# Static binaries: the runtime stage has no libc.
ENV CGO_ENABLED=0
RUN go build -trimpath -ldflags='-s -w' -o /out/ ./cmd/cairn ./cmd/cairnctl ./cmd/cairnutl && \
    go build -C deploy -trimpath -ldflags='-s -w' -o /out/cairn-healthcheck ./healthcheck && \
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
