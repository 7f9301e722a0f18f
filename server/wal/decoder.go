package wal

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"github.com/cairnkv/cairn/server/wal/walpb"
)

// segmentReader reads the frames of one segment file.
type segmentReader struct {
	path string
	size int64
	r    *bufio.Reader
}

func newSegmentReader(f *os.File, path string) (segmentReader, error) {
	st, err := f.Stat()
	if err != nil {
		return segmentReader{}, err
	}
	return segmentReader{path: path, size: st.Size(), r: bufio.NewReaderSize(f, 64*1024)}, nil
}

// decoder reads records from consecutive segments, checking the CRC chain.
// It returns io.EOF at the end of the log and an error wrapping
// io.ErrUnexpectedEOF when the last segment ends in a torn frame; every other
// damage is reported as corruption naming the file.
type decoder struct {
	segs         []segmentReader // segments not yet finished; segs[0] is current
	crc          uint32
	lastValidOff int64 // offset just after the last good frame in segs[0]
	// cutShort is set when the last segment's file ends inside a frame
	// (rather than the frame reading as zeros): see ErrSegmentCutShort.
	cutShort bool
}

func newDecoder(segs ...segmentReader) *decoder { return &decoder{segs: segs} }

// path names the segment being read, for error messages.
func (d *decoder) path() string {
	if len(d.segs) == 0 {
		return ""
	}
	return d.segs[0].path
}

func (d *decoder) decode(rec *walpb.Record) error {
	for len(d.segs) > 0 {
		err := d.decodeInSegment(rec)
		if err != io.EOF {
			return err
		}
		if len(d.segs) == 1 {
			return io.EOF // keep lastValidOff: appends continue there
		}
		d.segs = d.segs[1:]
		d.lastValidOff = 0
	}
	return io.EOF
}

// decodeInSegment reads the next frame of segs[0]. io.EOF means the segment
// ended cleanly, at its end or at a zero length word (preallocated space).
func (d *decoder) decodeInSegment(rec *walpb.Record) error {
	seg := d.segs[0]
	var word [frameHeaderBytes]byte
	if _, err := io.ReadFull(seg.r, word[:]); err != nil {
		if err == io.EOF {
			return io.EOF
		}
		if err != io.ErrUnexpectedEOF {
			return err
		}
		return d.endsInsideFrame("frame header")
	}
	lenField := binary.LittleEndian.Uint64(word[:])
	if lenField == 0 {
		return io.EOF
	}
	recBytes, padBytes := decodeFrameSize(lenField)
	if recBytes > seg.size-d.lastValidOff-frameHeaderBytes-padBytes {
		return d.endsInsideFrame(fmt.Sprintf("frame of %d bytes", recBytes))
	}
	data := make([]byte, recBytes+padBytes)
	if _, err := io.ReadFull(seg.r, data); err != nil {
		if err != io.EOF && err != io.ErrUnexpectedEOF {
			return err
		}
		return d.endsInsideFrame("frame body")
	}
	if err := rec.Unmarshal(data[:recBytes]); err != nil {
		if d.isTornFrame(data) {
			return d.truncated("frame body")
		}
		return fmt.Errorf("wal: corrupt record in %s at offset %d: %v", seg.path, d.lastValidOff, err)
	}
	if err := d.checkCRC(rec, data); err != nil {
		return err
	}
	d.lastValidOff += frameHeaderBytes + recBytes + padBytes
	return nil
}

// checkCRC validates rec against the rolling CRC. A crc record restates the
// CRC carried over from the previous segment; a decoder that starts in the
// middle of the log (crc still 0) adopts it.
func (d *decoder) checkCRC(rec *walpb.Record, frame []byte) error {
	if rec.Type == crcType {
		if d.crc != 0 && rec.Crc != d.crc {
			return d.crcMismatch()
		}
		d.crc = rec.Crc
		return nil
	}
	next := crc32.Update(d.crc, crcTable, rec.Data)
	if rec.Crc != next {
		if d.isTornFrame(frame) {
			return d.truncated("frame body")
		}
		return d.crcMismatch()
	}
	d.crc = next
	return nil
}

func (d *decoder) crcMismatch() error {
	return fmt.Errorf("%w in %s at offset %d", ErrCRCMismatch, d.path(), d.lastValidOff)
}

// truncated reports a frame cut short. Only the last segment may end that
// way (a crash during an append); anywhere else it is corruption.
func (d *decoder) truncated(what string) error {
	if len(d.segs) == 1 {
		return fmt.Errorf("%w: torn %s in %s at offset %d", io.ErrUnexpectedEOF, what, d.path(), d.lastValidOff)
	}
	return fmt.Errorf("wal: truncated %s in %s at offset %d", what, d.path(), d.lastValidOff)
}

// endsInsideFrame reports a frame that runs past the end of its file.
func (d *decoder) endsInsideFrame(what string) error {
	d.cutShort = true
	return d.truncated(what)
}

// tailSize is the size of the segment being read, the last one once the
// decoder has reached the end of the log.
func (d *decoder) tailSize() int64 {
	if len(d.segs) == 0 {
		return 0
	}
	return d.segs[0].size
}

// isTornFrame reports whether a bad frame in the last segment looks like an
// unfinished write: some sector it spans is still all zeros. Disks write
// sectors atomically, so a zero sector means the write never reached it.
func (d *decoder) isTornFrame(frame []byte) bool {
	if len(d.segs) != 1 {
		return false
	}
	off := d.lastValidOff + frameHeaderBytes
	for len(frame) > 0 {
		n := int(minSectorSize - off%minSectorSize)
		n = min(n, len(frame))
		if allZero(frame[:n]) {
			return true
		}
		frame = frame[n:]
		off += int64(n)
	}
	return false
}

func allZero(b []byte) bool {
	for _, v := range b {
		if v != 0 {
			return false
		}
	}
	return true
}

// isTornTail reports whether err is the decoder's torn-last-frame error.
func isTornTail(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }
