# make bench: build cairn, run the standard benchmark suite against fresh
# 1- and 3-member clusters, write bench-report/ (BENCH_ETCD=1 adds etcd,
# BENCH_ROUNDS=N repeats it alternating the servers, BENCH_BASE=<binary>
# adds another cairn build as "base").
.PHONY: bench
bench:
	go run ./tools/benchmark/suite -out bench-report

# make bench-watch: watch at scale (issue 18): 100,000 watchers on 1,000
# streams over 100 and over 10,000 connections, a fresh 1-member cluster per
# case (BENCH_ETCD=1 adds etcd, BENCH_ROUNDS=N alternates, ARGS="-members 1,3"
# adds 3 members); raises the open-file limit for the 10,000 connections.
.PHONY: bench-watch
bench-watch:
	go run ./tools/benchmark/suite -out bench-watch-report -suite watch-scale -members 1 $(ARGS)

# make bench-big: the big-store benchmark (issue 15): a fresh cairn member
# (and etcd with BENCH_ETCD=1) loaded with KEYS sequential keys x 2 versions,
# then restarts, compaction and defrag under a probe; writes bench-big-report/.
# KEYS=50000 gives a quick run; ARGS passes further flags (e.g. --skip-defrag).
KEYS ?= 1000000
.PHONY: bench-big
bench-big:
	go run ./tools/benchmark/bigstore -out bench-big-report --keys $(KEYS) $(ARGS)

# make image: the container image cairn:latest from the Dockerfile (needs
# the golang base image). IMAGE_TOOL=docker to use docker.
IMAGE ?= cairn:latest
IMAGE_TOOL ?= podman
.PHONY: image
image:
	$(IMAGE_TOOL) build -t $(IMAGE) -f Dockerfile .

# make image-test: build the runtime stage offline from binaries built on
# this host, run it, check /health, the HEALTHCHECK and a put/get.
.PHONY: image-test
image-test:
	./scripts/image-test.sh
