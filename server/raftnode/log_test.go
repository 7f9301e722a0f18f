package raftnode

import (
	"io"
	"log"
)

func nopStdLogger() *log.Logger { return log.New(io.Discard, "", 0) }
