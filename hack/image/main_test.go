package main

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func TestBuildWritesALoadableImage(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "image.tar")
	if err := build(self, "/raftka-broker", "raftka/broker:v0.1.0", out, extraBinaries{{"/raftka", self}}); err != nil {
		t.Fatal(err)
	}
	tag, _ := name.NewTag("raftka/broker:v0.1.0")
	img, err := tarball.ImageFromPath(out, &tag)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Config.Entrypoint) != 1 || cfg.Config.Entrypoint[0] != "/raftka-broker" || cfg.Config.User != "65532:65532" || cfg.OS != "linux" {
		t.Fatalf("config %+v", cfg.Config)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %d %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	want, _ := os.Stat(self)
	tr := tar.NewReader(rc)
	found := map[string]bool{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == "raftka-broker" || h.Name == "raftka" {
			if h.Size != want.Size() || h.Mode&0o111 == 0 {
				t.Fatalf("binary %s in layer: size %d mode %o", h.Name, h.Size, h.Mode)
			}
			found[h.Name] = true
		}
	}
	if !found["raftka-broker"] || !found["raftka"] {
		t.Fatalf("binaries in the layer: %v, want the entrypoint and the extra one", found)
	}
}
