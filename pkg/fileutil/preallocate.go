package fileutil

import "os"

// extendByTruncate grows f to size without shrinking it.
func extendByTruncate(f *os.File, size int64) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() >= size {
		return nil
	}
	return f.Truncate(size)
}
