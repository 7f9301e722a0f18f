# make bench: build cairn, run the standard benchmark suite against fresh
# 1- and 3-member clusters, write bench-report/ (BENCH_ETCD=1 adds etcd,
# BENCH_ROUNDS=N repeats it alternating the servers, BENCH_BASE=<binary>
# adds another cairn build as "base").
.PHONY: bench
bench:
	go run ./tools/benchmark/suite -out bench-report
