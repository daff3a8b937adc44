package fetch

import (
	"fmt"
	"io"
)

// readCapped reads a whole body, refusing one longer than limit bytes without
// ever holding more than limit+1 of them.
func readCapped(r io.Reader, contentLength, limit int64) ([]byte, error) {
	if contentLength > limit {
		return nil, fmt.Errorf("%w: Content-Length %d is over the %d-byte cap", ErrTooLarge, contentLength, limit)
	}
	size := int64(512)
	if contentLength > 0 {
		size = contentLength + 1
	}
	buf := make([]byte, 0, size)
	for {
		if int64(len(buf)) > limit {
			return nil, fmt.Errorf("%w: more than the %d-byte cap", ErrTooLarge, limit)
		}
		if len(buf) == cap(buf) {
			// Grow by doubling, never past limit+1: the buffer never holds
			// more than the cap and one byte to prove it was passed.
			nb := make([]byte, len(buf), min(max(2*int64(cap(buf)), 512), limit+1))
			copy(nb, buf)
			buf = nb
		}
		n, err := r.Read(buf[len(buf):min(int64(cap(buf)), limit+1)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			if int64(len(buf)) > limit {
				return nil, fmt.Errorf("%w: more than the %d-byte cap", ErrTooLarge, limit)
			}
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
