# make bench: build cairn, run the standard benchmark suite against fresh
# 1- and 3-member clusters, write bench-report/ (BENCH_ETCD=1 adds etcd).
.PHONY: bench
bench:
	go run ./tools/benchmark/suite -out bench-report
