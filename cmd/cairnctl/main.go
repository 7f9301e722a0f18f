// Command cairnctl is cairn's command-line client; it takes etcdctl v3.7's
// commands, flags and output formats.
package main

import (
	"os"

	"github.com/cairnkv/cairn/ctl"
)

func main() { os.Exit(ctl.Main(os.Args[1:])) }
