package ytlocal

import (
	"slices"
)

// --- files ---

// rawResult is a response body sent as is (read_file).
type rawResult []byte

func cmdWriteFile(c *call) (any, error) {
	s := c.s
	rich, err := c.richPath("path")
	if err != nil {
		return nil, err
	}
	p, err := parsePath(string(rich.Path))
	if err != nil {
		return nil, err
	}
	data := c.input
	if data == nil {
		data = []byte{}
	}
	tx, finish, err := s.txForCall(c)
	if err != nil {
		return nil, err
	}
	err = func() error {
		n, err := s.resolveTyped(p, tx, "file", "write file data to")
		if err != nil {
			return err
		}
		if _, err := s.acquire(n, tx, lockExclusive, "", "", false); err != nil {
			return err
		}
		if rich.Append != nil && *rich.Append {
			cur := s.tree.contentOf(n, tx).data
			data = append(slices.Clip(cur), data...)
		}
		s.tree.setContent(n, tx, &content{data: slices.Clone(data)})
		return nil
	}()
	return nil, finish(err)
}

func cmdReadFile(c *call) (any, error) {
	s := c.s
	p, err := c.pathRef("path")
	if err != nil {
		return nil, err
	}
	offset, err := c.int64p("offset", 0)
	if err != nil {
		return nil, err
	}
	length, err := c.int64p("length", -1)
	if err != nil {
		return nil, err
	}
	tx, err := s.readTx(c)
	if err != nil {
		return nil, err
	}
	n, err := s.resolveTyped(p, tx, "file", "read file data from")
	if err != nil {
		return nil, err
	}
	data := s.tree.contentOf(n, tx).data
	if offset < 0 {
		offset = 0
	}
	if offset > int64(len(data)) {
		offset = int64(len(data))
	}
	data = data[offset:]
	if length >= 0 && length < int64(len(data)) {
		data = data[:length]
	}
	return rawResult(data), nil
}
