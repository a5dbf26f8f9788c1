// Command image builds an OCI image tarball from one static binary, its
// entrypoint, and optionally others beside it, with no Docker daemon and no
// base image: `make image` uses it for the broker (with the raftka
// command-line tool) and the operator. The tarball loads with `docker load` or `ctr images import`.
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
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
	var extra extraBinaries
	flag.Var(&extra, "extra", "another static binary for the image, as /path=file (repeatable)")
	flag.Parse()
	if err := build(*binary, *path, *tag, *out, extra); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

// extraBinaries are the --extra flags: path in the image, file here.
type extraBinaries [][2]string

func (e *extraBinaries) String() string { return fmt.Sprint(*e) }
func (e *extraBinaries) Set(v string) error {
	path, file, ok := strings.Cut(v, "=")
	if !ok || !strings.HasPrefix(path, "/") || file == "" {
		return fmt.Errorf("%q: want /path=file", v)
	}
	*e = append(*e, [2]string{path, file})
	return nil
}

func build(binary, path, tag, out string, extra extraBinaries) error {
	if binary == "" || path == "" || tag == "" || out == "" {
		return fmt.Errorf("--binary, --path, --tag and --out are required")
	}
	files := map[string][]byte{}
	for _, pf := range append(extraBinaries{{path, binary}}, extra...) {
		data, err := os.ReadFile(pf[1])
		if err != nil {
			return err
		}
		files[pf[0]] = data
	}
	layerTar, err := layer(files)
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

// layer is a tar with the binaries, by path, and the directories a broker
// writes to, owned by the image's non-root user.
func layer(files map[string][]byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	for _, dir := range []string{"tmp/", "var/", "var/lib/", "var/lib/raftka/"} {
		if err := tw.WriteHeader(&tar.Header{Name: dir, Typeflag: tar.TypeDir, Mode: 0o1777, Uid: 65532, Gid: 65532, ModTime: epoch}); err != nil {
			return nil, err
		}
	}
	paths := make([]string, 0, len(files))
	for path := range files {
		paths = append(paths, path)
	}
	sort.Strings(paths) // the same layer, byte for byte, from the same binaries
	for _, path := range paths {
		data := files[path]
		if err := tw.WriteHeader(&tar.Header{Name: path[1:], Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(data)), ModTime: epoch}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
