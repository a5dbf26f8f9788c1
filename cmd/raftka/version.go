package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// version and commit are the release and the commit this build is of;
// make build sets them (-ldflags -X), as the Go toolchain may be told not
// to stamp the commit (-buildvcs=false).
var (
	version = "dev"
	commit  = ""
)

// versionString is the version, the commit it was built from (with
// "-dirty" for uncommitted changes) and the Go that built it.
func versionString() string {
	built := commit
	if info, ok := debug.ReadBuildInfo(); ok && built == "" {
		dirty := ""
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				built = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = "-dirty"
				}
			}
		}
		if built != "" {
			built += dirty
		}
	}
	if built == "" {
		built = "unknown"
	}
	return fmt.Sprintf("raftka %s (commit %s, %s)", version, built, runtime.Version())
}
