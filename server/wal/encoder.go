package wal

import (
	"encoding/binary"
	"hash/crc32"
	"io"
	"os"

	"github.com/cairnkv/cairn/server/metrics"
	"github.com/cairnkv/cairn/server/wal/walpb"
)

const (
	// frameHeaderBytes is the size of the little-endian length word.
	frameHeaderBytes = 8
	// minSectorSize is the smallest unit a disk writes atomically; the
	// decoder uses it to tell torn writes from corruption.
	minSectorSize = 512
	// pageBytes aligns the writes the encoder issues, so a torn write damages
	// whole sectors at the end of the file rather than arbitrary bytes.
	pageBytes = 8 * minSectorSize
	// flushWatermark bounds the bytes buffered between syncs.
	flushWatermark = 128 * 1024
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// encodeFrameSize returns the length word for a record of n bytes and the
// zero bytes of padding that keep frames 8-byte aligned. When there is
// padding, the top bit of the word is set and the low three bits of the top
// byte hold the pad length.
func encodeFrameSize(n int) (lenField uint64, padBytes int) {
	lenField = uint64(n)
	padBytes = (8 - n%8) % 8
	if padBytes != 0 {
		lenField |= uint64(0x80|padBytes) << 56
	}
	return lenField, padBytes
}

// decodeFrameSize is the inverse of encodeFrameSize.
func decodeFrameSize(lenField uint64) (recBytes, padBytes int64) {
	recBytes = int64(lenField &^ (uint64(0xff) << 56))
	if lenField&(1<<63) != 0 {
		padBytes = int64((lenField >> 56) & 0x7)
	}
	return recBytes, padBytes
}

// encoder appends framed records to one segment file. It keeps the rolling
// CRC and buffers frames until flush, writing whole pages in between.
type encoder struct {
	f   io.WriterAt // the segment file, through disk
	crc uint32
	off int64  // file offset of buf[0]
	buf []byte // frames not yet written to f
}

func newEncoder(f *os.File, off int64, prevCrc uint32) *encoder {
	return &encoder{f: disk.writer(f), crc: prevCrc, off: off}
}

// encode sets rec.Crc to the rolling CRC including rec.Data and buffers the
// frame. A crc record has no Data, so its Crc is the previous file's CRC.
func (e *encoder) encode(rec *walpb.Record) error {
	e.crc = crc32.Update(e.crc, crcTable, rec.Data)
	rec.Crc = e.crc
	start := len(e.buf)
	e.buf = append(e.buf, make([]byte, frameHeaderBytes)...)
	e.buf = rec.AppendMarshal(e.buf)
	lenField, pad := encodeFrameSize(len(e.buf) - start - frameHeaderBytes)
	e.buf = append(e.buf, make([]byte, pad)...)
	binary.LittleEndian.PutUint64(e.buf[start:], lenField)
	if len(e.buf) >= flushWatermark {
		return e.writeWholePages()
	}
	return nil
}

// end returns the file offset just after the last encoded frame.
func (e *encoder) end() int64 { return e.off + int64(len(e.buf)) }

// flush writes every buffered frame to the file (not yet synced).
func (e *encoder) flush() error { return e.write(len(e.buf)) }

// writeWholePages writes the buffered bytes up to the last page boundary.
func (e *encoder) writeWholePages() error {
	aligned := e.end() - e.end()%pageBytes
	if aligned <= e.off {
		return nil
	}
	return e.write(int(aligned - e.off))
}

func (e *encoder) write(n int) error {
	if n == 0 {
		return nil
	}
	if _, err := e.f.WriteAt(e.buf[:n], e.off); err != nil {
		return err
	}
	e.off += int64(n)
	metrics.WALWriteBytes.Add(float64(n))
	e.buf = e.buf[:copy(e.buf, e.buf[n:])]
	return nil
}
