// Command cairnutl is cairn's etcdutl: offline operations on a member's
// files (snapshot status and restore, defrag, hashkv). See package utl.
package main

import (
	"os"

	"github.com/cairnkv/cairn/utl"
)

func main() { os.Exit(utl.Main(os.Args[1:], os.Stdout, os.Stderr)) }
