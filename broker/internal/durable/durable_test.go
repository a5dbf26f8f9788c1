package durable

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// WriteAtv writes its buffers in order at the offset, empty ones and more
// than one pwritev takes included, and leaves the bytes around them alone.
func TestWriteAtvWritesEveryBufferInOrder(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(bytes.Repeat([]byte{'.'}, 100)); err != nil {
		t.Fatal(err)
	}
	var bufs [][]byte
	want := bytes.Repeat([]byte{'.'}, 10)
	for i := 0; i < 3*maxIovecs+7; i++ {
		b := bytes.Repeat([]byte{byte(i)}, i%5) // every fifth empty
		bufs = append(bufs, b)
		want = append(want, b...)
	}
	if err := WriteAtv(f, bufs, 10); err != nil {
		t.Fatal(err)
	}
	want = append(want, bytes.Repeat([]byte{'.'}, max(0, 100-len(want)))...)
	got, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("file holds %d bytes that differ from the %d written", len(got), len(want))
	}
	for i, b := range bufs {
		if len(b) != i%5 {
			t.Fatalf("buffer %d changed length to %d", i, len(b))
		}
	}
}
