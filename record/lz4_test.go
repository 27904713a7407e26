package record

import (
	"io"

	"github.com/pierrec/lz4/v4"
)

func newLZ4(w io.Writer) *lz4.Writer { return lz4.NewWriter(w) }
