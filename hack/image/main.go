// Command image builds an OCI image tarball from one static binary, with no
// Docker daemon and no base image: `make image` uses it for the broker and
// the operator. The tarball loads with `docker load` or `ctr images import`.
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func main() {
	binary := flag.String("binary", "", "static binary to put at /<name>")
	path := flag.String("path", "", "path of the binary in the image, such as /raftka-broker")
	tag := flag.String("tag", "", "image reference, such as raftka/broker:v0.1.0")
	out := flag.String("out", "", "tarball to write")
	flag.Parse()
	if err := build(*binary, *path, *tag, *out); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func build(binary, path, tag, out string) error {
	if binary == "" || path == "" || tag == "" || out == "" {
		return fmt.Errorf("--binary, --path, --tag and --out are required")
	}
	data, err := os.ReadFile(binary)
	if err != nil {
		return err
	}
	layerTar, err := layer(path, data)
	if err != nil {
		return err
	}
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layerTar)), nil })
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		return err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture, cfg.OS = "amd64", "linux"
	cfg.Config = v1.Config{Entrypoint: []string{path}, User: "65532:65532", WorkingDir: "/",
		Env: []string{"PATH=/"}, Labels: map[string]string{"org.opencontainers.image.source": "https://github.com/raftka/raftka"}}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return err
	}
	ref, err := name.NewTag(tag)
	if err != nil {
		return err
	}
	return tarball.WriteToFile(out, ref, img)
}

// layer is a tar with the binary and the directories a broker writes to,
// owned by the image's non-root user.
func layer(path string, data []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	for _, dir := range []string{"tmp/", "var/", "var/lib/", "var/lib/raftka/"} {
		if err := tw.WriteHeader(&tar.Header{Name: dir, Typeflag: tar.TypeDir, Mode: 0o1777, Uid: 65532, Gid: 65532, ModTime: epoch}); err != nil {
			return nil, err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Name: path[1:], Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(data)), ModTime: epoch}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(data); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
