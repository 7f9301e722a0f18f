// Command cairn is the cairn server: an etcd v3.7 member. It takes etcd's
// flags, ETCD_* environment variables and --config-file.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"

	"go.uber.org/zap"

	"github.com/cairnkv/cairn/pkg/gctuner"
	"github.com/cairnkv/cairn/server/config"
	"github.com/cairnkv/cairn/server/discovery"
	"github.com/cairnkv/cairn/server/embed"
	"github.com/cairnkv/cairn/server/v3client"
)

func main() { os.Exit(run(os.Args[1:], os.Environ())) }

func run(args, environ []string) int {
	cfg, err := config.Parse(args, environ)
	var usageErr *config.UsageError
	switch {
	case errors.As(err, &usageErr):
		fmt.Fprintln(os.Stderr, err)
		fmt.Fprintln(os.Stderr, config.UsageLine())
		return 2
	case err != nil:
		fmt.Fprintf(os.Stderr, "cairn: failed to verify flags: %v\n", err)
		return 1
	case cfg.PrintHelp:
		fmt.Fprintln(os.Stderr, config.UsageLine())
		fmt.Fprint(os.Stdout, config.Usage())
		return 0
	case cfg.PrintVersion:
		fmt.Print(config.VersionText(gitSHA(), runtime.Version(), runtime.GOOS, runtime.GOARCH))
		return 0
	}
	lg, closeLog, err := embed.NewLogger(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer closeLog()
	defer lg.Sync()
	cfg.LogNotices(lg)
	// A small heap's collections would otherwise cost more CPU than the
	// requests that fill it (see pkg/gctuner); GOGC in the environment
	// turns this off.
	defer gctuner.Start(gctuner.DefaultHeadroom)()
	return serve(cfg, lg)
}

func serve(cfg *config.Config, lg *zap.Logger) int {
	m, err := embed.StartMemberWith(cfg, lg, embed.Extensions{
		Discover:       discovery.Bootstrap, // --discovery-token
		ClientServices: v3client.Install,    // Lock and Election
	})
	if err != nil {
		lg.Error("failed to start member", zap.Error(err))
		return 1
	}
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, syscall.SIGTERM, syscall.SIGINT)
	ready, failure := m.ReadyNotify(), "member failed before it was ready"
	for {
		select {
		case <-ready:
			lg.Info("ready to serve client requests")
			ready, failure = nil, "member failed" // a nil channel is never ready again
		case err := <-m.Err():
			lg.Error(failure, zap.Error(err))
			m.Close()
			return 1
		case sig := <-sigc:
			return stop(m, lg, sig)
		}
	}
}

func stop(m *embed.Member, lg *zap.Logger, sig os.Signal) int {
	lg.Info("received signal; shutting down", zap.String("signal", sig.String()))
	m.Close()
	lg.Info("stopped member")
	return 0
}

// gitSHA is the VCS revision the binary was built from, or "Not provided".
func gitSHA() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 7 {
				return s.Value[:7]
			}
		}
	}
	return "Not provided"
}
