package record

import "testing"

func TestHasTraceMagic(t *testing.T) {
	for _, c := range []struct {
		head []byte
		want bool
	}{
		{frameMagic[:], true},
		{append(frameMagic[:], 'x'), true},
		{frameMagic[:3], false},
		{nil, false},
		{[]byte("safety(\"P\", lambda: True)"), false},
	} {
		if got := HasTraceMagic(c.head); got != c.want {
			t.Errorf("HasTraceMagic(%q) = %v, want %v", c.head, got, c.want)
		}
	}
}
