package fetch

import (
	"fmt"
	"io"
)

// readCapped reads a whole body, refusing one longer than limit bytes. It
// never holds more than limit+1 body bytes while reading: a body of known
// length is read into one buffer of that size; one of unknown length into
// blocks (4 KiB growing to 256 KiB) joined only once the end is reached, so
// an endless or oversized body is dropped after the cap without a copy.
func readCapped(r io.Reader, contentLength, limit int64) ([]byte, error) {
	if contentLength > limit {
		return nil, fmt.Errorf("%w: Content-Length %d is over the %d-byte cap", ErrTooLarge, contentLength, limit)
	}
	if contentLength >= 0 {
		buf := make([]byte, contentLength+1) // one more, to see a lying length
		n, err := io.ReadFull(r, buf)
		switch {
		case err == io.ErrUnexpectedEOF || err == io.EOF:
			return buf[:n], nil
		case err != nil:
			return nil, err
		}
		// More than announced: read on as if the length were unknown.
		rest, err := readBlocks(r, limit-int64(n))
		if err != nil {
			return nil, err
		}
		return append(buf, rest...), nil
	}
	return readBlocks(r, limit)
}

func readBlocks(r io.Reader, limit int64) ([]byte, error) {
	var blocks [][]byte
	var total int64
	size := 4 << 10
	for {
		b := make([]byte, min(int64(size), limit+1-total))
		n, err := io.ReadFull(r, b)
		total += int64(n)
		if total > limit {
			return nil, fmt.Errorf("%w: more than the %d-byte cap", ErrTooLarge, limit)
		}
		blocks = append(blocks, b[:n])
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return nil, err
		}
		size = min(size*2, 256<<10)
	}
	if len(blocks) == 1 {
		return blocks[0], nil
	}
	out := make([]byte, 0, total)
	for i, b := range blocks {
		out = append(out, b...)
		blocks[i] = nil
	}
	return out, nil
}
