package fetch

import (
	"fmt"
	"io"
)

// readCapped reads a whole body, refusing one longer than max bytes without
// ever holding more than max+1 of them.
func readCapped(r io.Reader, contentLength, max int64) ([]byte, error) {
	if contentLength > max {
		return nil, fmt.Errorf("%w: Content-Length %d is over the %d-byte cap", ErrTooLarge, contentLength, max)
	}
	size := int64(512)
	if contentLength > 0 {
		size = contentLength + 1
	}
	buf := make([]byte, 0, size)
	for {
		if int64(len(buf)) > max {
			return nil, fmt.Errorf("%w: more than the %d-byte cap", ErrTooLarge, max)
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):min(int64(cap(buf)), max+1)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			if int64(len(buf)) > max {
				return nil, fmt.Errorf("%w: more than the %d-byte cap", ErrTooLarge, max)
			}
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
